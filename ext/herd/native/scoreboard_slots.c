/*
 * Herd::Cluster::ScoreboardSlots: a worker's two scoreboard writes per
 * request (Herd::Cluster::Scoreboard#busy and #idle) in C.
 *
 * The scoreboard is a shared anonymous mapping (Herd::SharedMemory::Native,
 * shared_memory.c) that the monitor reads for timeouts and /stats. These
 * functions take that mapping object and a slot number, never an address, and
 * check the slot against the mapping's size before writing. From Ruby, a
 * request's writes took some 25 method calls (the label put together, packed
 * numbers, Fiddle copies), a few microseconds of a live worker's CPU
 * (docs/HTTP.md, "The hot path"). Here they are plain
 * stores, the start time last with release order, so a monitor that sees it
 * set sees the label that goes with it (the Ruby code relies on the order of
 * two copies for the same).
 *
 * The slot layout is Scoreboard's (lib/herd/cluster/scoreboard.rb): started
 * (us, 0 when idle), requests, 8 bytes unused, then the label, ended by a
 * NUL unless it fills its room. Scoreboard uses this only when
 * ScoreboardSlots.layout matches its own and its memory is a Native
 * mapping; test/server/scoreboard_test.rb compares the bytes both write.
 */
#include <ruby.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

void herd_init_scoreboard_slots(VALUE herd);
char *herd_shared_memory_at(VALUE memory, long offset, long length); /* shared_memory.c */

#define SLOT_BYTES 256
#define REQUESTS_OFFSET 8
#define LABEL_OFFSET 24
#define LABEL_MAX (SLOT_BYTES - LABEL_OFFSET)

/* Slot `number` of `memory` (a Herd::SharedMemory::Native), all of it
 * inside the mapping, or raises before anything is written; an absurd
 * number saturates so that it fails the check instead of overflowing. */
static char *slot_at(VALUE memory, VALUE number) {
  long slot = NUM2LONG(number);
  long offset = slot > LONG_MAX / SLOT_BYTES ? LONG_MAX : slot < LONG_MIN / SLOT_BYTES ? LONG_MIN : slot * SLOT_BYTES;
  return herd_shared_memory_at(memory, offset, SLOT_BYTES);
}

/* Herd::Cluster::ScoreboardSlots.busy(memory, number, method, target): the
 * label "METHOD target", then the start time (monotonic us). */
static VALUE busy(VALUE self, VALUE memory, VALUE number, VALUE method, VALUE target) {
  StringValue(method);
  StringValue(target);
  char *slot = slot_at(memory, number);
  char label[LABEL_MAX];
  long used = 0;
  const char *pieces[3] = {RSTRING_PTR(method), " ", RSTRING_PTR(target)};
  long lengths[3] = {RSTRING_LEN(method), 1, RSTRING_LEN(target)};
  for (int i = 0; i < 3 && used < LABEL_MAX; i++) {
    long n = lengths[i] < LABEL_MAX - used ? lengths[i] : LABEL_MAX - used;
    memcpy(label + used, pieces[i], n);
    used += n;
  }
  if (used < LABEL_MAX) label[used++] = '\0';
  memcpy(slot + LABEL_OFFSET, label, used);

  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t started = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
  __atomic_store_n((int64_t *)slot, started, __ATOMIC_RELEASE);
  return Qnil;
}

/* Herd::Cluster::ScoreboardSlots.idle(memory, number, requests): the count,
 * then a start time of 0. */
static VALUE idle(VALUE self, VALUE memory, VALUE number, VALUE requests) {
  int64_t count = NUM2LL(requests);
  char *slot = slot_at(memory, number);
  memcpy(slot + REQUESTS_OFFSET, &count, sizeof(count));
  __atomic_store_n((int64_t *)slot, (int64_t)0, __ATOMIC_RELEASE);
  return Qnil;
}

/* @return [Array(Integer, Integer, Integer, Integer)] the layout this code
 *   writes: slot bytes, requests offset, label offset, label room */
static VALUE layout(VALUE self) {
  return rb_ary_new_from_args(4, INT2FIX(SLOT_BYTES), INT2FIX(REQUESTS_OFFSET), INT2FIX(LABEL_OFFSET),
                              INT2FIX(LABEL_MAX));
}

void herd_init_scoreboard_slots(VALUE herd) {
  VALUE cluster = rb_define_module_under(herd, "Cluster");
  VALUE module = rb_define_module_under(cluster, "ScoreboardSlots");
  rb_define_singleton_method(module, "busy", busy, 4);
  rb_define_singleton_method(module, "idle", idle, 3);
  rb_define_singleton_method(module, "layout", layout, 0);
}
