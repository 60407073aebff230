/*
 * Herd::SharedMemory::Native: the shared anonymous mapping behind
 * Herd::SharedMemory (lib/herd/shared_memory.rb), owned by a TypedData
 * object that holds its base and size, checks every access against that
 * size and unmaps it when freed or collected. C code that writes to it
 * (scoreboard_slots.c) takes the object, never an address from Ruby, and
 * goes through herd_shared_memory_at, the one bounds check.
 *
 * Where this file is not built, or HERD_C_EXTENSION=0, SharedMemory maps
 * through Fiddle and makes the same checks in Ruby;
 * test/server/scoreboard_test.rb runs the same tests against both.
 */
#include <ruby.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define INT_BYTES 8

void herd_init_shared_memory(VALUE herd);
char *herd_shared_memory_at(VALUE memory, long offset, long length);

struct mapping {
  char *base; /* NULL before initialize and once freed */
  long size;
};

static void mapping_free(void *pointer) {
  struct mapping *mapping = pointer;
  if (mapping->base) munmap(mapping->base, (size_t)mapping->size);
  ruby_xfree(mapping);
}

static size_t mapping_memsize(const void *pointer) {
  return sizeof(struct mapping);
}

static const rb_data_type_t mapping_type = {
  .wrap_struct_name = "Herd::SharedMemory::Native",
  .function = {.dmark = NULL, .dfree = mapping_free, .dsize = mapping_memsize},
  .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

static VALUE mapping_alloc(VALUE klass) {
  struct mapping *mapping;
  return TypedData_Make_Struct(klass, struct mapping, &mapping_type, mapping);
}

/* Herd::SharedMemory::OutOfBounds, a Herd::Error defined in Ruby; IndexError
 * when shared_memory.rb is not loaded, so an overrun raises either way. */
static VALUE out_of_bounds_class(void) {
  ID herd_id = rb_intern("Herd"), memory_id = rb_intern("SharedMemory"), error_id = rb_intern("OutOfBounds");
  if (!rb_const_defined_at(rb_cObject, herd_id)) return rb_eIndexError;
  VALUE herd = rb_const_get_at(rb_cObject, herd_id);
  if (!rb_const_defined_at(herd, memory_id)) return rb_eIndexError;
  VALUE memory = rb_const_get_at(herd, memory_id);
  return rb_const_defined_at(memory, error_id) ? rb_const_get_at(memory, error_id) : rb_eIndexError;
}

NORETURN(static void out_of_bounds(const struct mapping *mapping, long offset, long length));
static void out_of_bounds(const struct mapping *mapping, long offset, long length) {
  if (!mapping->base) {
    rb_raise(out_of_bounds_class(), "shared memory: %ld bytes at offset %ld of a freed mapping", length, offset);
  }
  rb_raise(out_of_bounds_class(), "shared memory: %ld bytes at offset %ld outside the mapping's %ld bytes",
           length, offset, mapping->size);
}

/* Where `length` bytes at `offset` of `memory` start, or raises (TypeError
 * when `memory` is not a Native mapping, OutOfBounds when the bytes are not
 * all inside it): the check every access makes before touching memory. */
char *herd_shared_memory_at(VALUE memory, long offset, long length) {
  struct mapping *mapping = rb_check_typeddata(memory, &mapping_type);
  if (!mapping->base || offset < 0 || length < 0 || offset > mapping->size || length > mapping->size - offset) {
    out_of_bounds(mapping, offset, length);
  }
  return mapping->base + offset;
}

/* A slot number's byte offset, saturated so that an absurd one fails the
 * bounds check instead of overflowing. */
static long slot_offset(VALUE slot) {
  long number = NUM2LONG(slot);
  if (number > LONG_MAX / INT_BYTES) return LONG_MAX;
  if (number < 0) return number < LONG_MIN / INT_BYTES ? LONG_MIN : number * INT_BYTES;
  return number * INT_BYTES;
}

/* Writes pair with reads (release before a write, acquire after a read), so
 * a process that reads a value also sees what the writer wrote before it:
 * the scoreboard's monitor reads a label only once its start time is set. */
static void store_int(VALUE self, long offset, int64_t value) {
  char *at = herd_shared_memory_at(self, offset, INT_BYTES);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy(at, &value, INT_BYTES);
}

static VALUE load_int(VALUE self, long offset) {
  int64_t value;
  memcpy(&value, herd_shared_memory_at(self, offset, INT_BYTES), INT_BYTES);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return LL2NUM(value);
}

/* initialize(bytes): maps `bytes` bytes, shared with the processes this one
 * forks afterwards. */
static VALUE mapping_initialize(VALUE self, VALUE bytes) {
  struct mapping *mapping = rb_check_typeddata(self, &mapping_type);
  long size = NUM2LONG(bytes);
  if (size <= 0) rb_raise(rb_eArgError, "shared memory of %ld bytes: must be at least 1", size);
  if (mapping->base) rb_raise(rb_eArgError, "shared memory already mapped");
  void *base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) rb_sys_fail("mmap");
  mapping->base = base;
  mapping->size = size;
  return self;
}

/* [](slot): the signed 64-bit number in slot `slot` (8 bytes each). */
static VALUE mapping_aref(VALUE self, VALUE slot) {
  return load_int(self, slot_offset(slot));
}

/* []=(slot, value) */
static VALUE mapping_aset(VALUE self, VALUE slot, VALUE value) {
  int64_t number = NUM2LL(value);
  store_int(self, slot_offset(slot), number);
  return value;
}

/* read_int(offset): the signed 64-bit number at byte `offset`. */
static VALUE mapping_read_int(VALUE self, VALUE offset) {
  return load_int(self, NUM2LONG(offset));
}

/* write_int(offset, value) */
static VALUE mapping_write_int(VALUE self, VALUE offset, VALUE value) {
  int64_t number = NUM2LL(value);
  store_int(self, NUM2LONG(offset), number);
  return Qnil;
}

/* write_ints(offset, values): signed 64-bit numbers one after the other
 * from byte `offset`. Every value is checked before the first is written,
 * so a bad one (or an overrun) writes nothing. */
static VALUE mapping_write_ints(VALUE self, VALUE offset, VALUE values) {
  long at = NUM2LONG(offset);
  Check_Type(values, T_ARRAY);
  long count = RARRAY_LEN(values);
  /* Integers only: converting anything else calls Ruby code, which could change the Array between the two passes. */
  for (long i = 0; i < count; i++) {
    VALUE value = RARRAY_AREF(values, i);
    if (!RB_INTEGER_TYPE_P(value)) {
      rb_raise(rb_eTypeError, "shared memory: %s given, Integer expected", rb_obj_classname(value));
    }
    (void)NUM2LL(value);
  }
  char *to = herd_shared_memory_at(self, at, count * INT_BYTES);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  for (long i = 0; i < count; i++) {
    int64_t number = NUM2LL(RARRAY_AREF(values, i));
    memcpy(to + i * INT_BYTES, &number, INT_BYTES);
  }
  return Qnil;
}

/* read(offset, length): `length` raw bytes at byte `offset`, binary. */
static VALUE mapping_read(VALUE self, VALUE offset, VALUE length) {
  long count = NUM2LONG(length);
  const char *from = herd_shared_memory_at(self, NUM2LONG(offset), count);
  VALUE bytes = rb_str_new(from, count);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return bytes;
}

/* write(offset, bytes): writes raw bytes at byte `offset`. */
static VALUE mapping_write(VALUE self, VALUE offset, VALUE bytes) {
  long at = NUM2LONG(offset);
  StringValue(bytes);
  char *to = herd_shared_memory_at(self, at, RSTRING_LEN(bytes));
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy(to, RSTRING_PTR(bytes), RSTRING_LEN(bytes));
  return Qnil;
}

/* size: the mapping's bytes, 0 once freed. */
static VALUE mapping_size(VALUE self) {
  struct mapping *mapping = rb_check_typeddata(self, &mapping_type);
  return LONG2NUM(mapping->base ? mapping->size : 0);
}

/* free: unmaps the memory (in this process only); every access afterwards raises. */
static VALUE mapping_unmap(VALUE self) {
  struct mapping *mapping = rb_check_typeddata(self, &mapping_type);
  if (mapping->base) munmap(mapping->base, (size_t)mapping->size);
  mapping->base = NULL;
  mapping->size = 0;
  return Qnil;
}

static VALUE mapping_native_p(VALUE self) {
  return Qtrue;
}

void herd_init_shared_memory(VALUE herd) {
  VALUE shared_memory = rb_define_class_under(herd, "SharedMemory", rb_cObject);
  VALUE native = rb_define_class_under(shared_memory, "Native", shared_memory);
  rb_define_alloc_func(native, mapping_alloc);
  /* A copy would be a second owner of the mapping, unmapping it twice. */
  rb_undef_method(native, "initialize_copy");
  rb_define_method(native, "initialize", mapping_initialize, 1);
  rb_define_method(native, "[]", mapping_aref, 1);
  rb_define_method(native, "[]=", mapping_aset, 2);
  rb_define_method(native, "read_int", mapping_read_int, 1);
  rb_define_method(native, "write_int", mapping_write_int, 2);
  rb_define_method(native, "write_ints", mapping_write_ints, 2);
  rb_define_method(native, "read", mapping_read, 2);
  rb_define_method(native, "write", mapping_write, 2);
  rb_define_method(native, "size", mapping_size, 0);
  rb_define_method(native, "free", mapping_unmap, 0);
  rb_define_method(native, "native?", mapping_native_p, 0);
}
