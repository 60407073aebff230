/*
 * Herd::Server::ScoreboardSlots: a worker's two scoreboard writes per
 * request (Herd::Server::Scoreboard#busy and #idle) in C.
 *
 * The scoreboard is a shared anonymous mapping (Herd::SharedMemory, mmap
 * through Fiddle) that the monitor reads for timeouts and /stats. From Ruby,
 * a request's writes took some 25 method calls (the label put together,
 * packed numbers, Fiddle copies), about 3 us of a live worker's CPU. Here
 * they are plain stores, the start time last with release order, so a
 * monitor that sees it set sees the label that goes with it (the Ruby code
 * relies on the order of two copies for the same).
 *
 * The slot layout is Scoreboard's (lib/herd/server/scoreboard.rb): started
 * (us, 0 when idle), requests, 8 bytes unused, then the label, ended by a
 * NUL unless it fills its room. Scoreboard uses this only when
 * ScoreboardSlots.layout matches its own; test/server/scoreboard_test.rb
 * compares the bytes both write.
 */
#include <ruby.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

void herd_init_scoreboard_slots(VALUE herd);

#define SLOT_BYTES 256
#define REQUESTS_OFFSET 8
#define LABEL_OFFSET 24
#define LABEL_MAX (SLOT_BYTES - LABEL_OFFSET)

static char *slot_at(VALUE address, VALUE offset) {
  uintptr_t start = (uintptr_t)NUM2SIZET(address);
  long at = NUM2LONG(offset);
  if (start == 0 || at < 0 || at % SLOT_BYTES != 0) rb_raise(rb_eArgError, "no scoreboard slot at %ld of address %p", at, (void *)start);
  return (char *)start + at;
}

/* Herd::Server::ScoreboardSlots.busy(address, offset, method, target): the
 * label "METHOD target", then the start time (monotonic us). */
static VALUE busy(VALUE self, VALUE address, VALUE offset, VALUE method, VALUE target) {
  StringValue(method);
  StringValue(target);
  char *slot = slot_at(address, offset);
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

/* Herd::Server::ScoreboardSlots.idle(address, offset, requests): the count,
 * then a start time of 0. */
static VALUE idle(VALUE self, VALUE address, VALUE offset, VALUE requests) {
  char *slot = slot_at(address, offset);
  int64_t count = NUM2LL(requests);
  memcpy(slot + REQUESTS_OFFSET, &count, sizeof(count));
  __atomic_store_n((int64_t *)slot, (int64_t)0, __ATOMIC_RELEASE);
  return Qnil;
}

/* @return [Array(Integer, Integer, Integer, Integer)] the layout this code
 *   writes: slot bytes, requests offset, label offset, label room */
static VALUE layout(VALUE self) {
  return rb_ary_new_from_args(4, INT2FIX(SLOT_BYTES), INT2FIX(REQUESTS_OFFSET), INT2FIX(LABEL_OFFSET), INT2FIX(LABEL_MAX));
}

void herd_init_scoreboard_slots(VALUE herd) {
  VALUE server = rb_define_module_under(herd, "Server");
  VALUE module = rb_define_module_under(server, "ScoreboardSlots");
  rb_define_singleton_method(module, "busy", busy, 4);
  rb_define_singleton_method(module, "idle", idle, 3);
  rb_define_singleton_method(module, "layout", layout, 0);
}
