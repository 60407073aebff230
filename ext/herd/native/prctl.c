/*
 * Herd::Linux::Native.prctl: prctl(2) without Fiddle, for the one call every
 * pool worker makes right after its fork (PR_SET_PDEATHSIG).
 *
 * Through Fiddle the call ran libffi and Fiddle's argument conversion in a
 * process whose every page is still shared with its parent, a page fault at
 * each step and a large part of what a small Herd.map costs (docs/POOL.md,
 * "Cost per call"). Here it is one C function in a library the parent already
 * loaded. Herd::Linux keeps the Fiddle path where this file is not built, and
 * HERD_C_EXTENSION=0 chooses it.
 */
#include <ruby.h>
#ifdef HAVE_SYS_PRCTL_H
#include <sys/prctl.h>
#include <errno.h>

/* Returns 0 or the errno; only the two-integer form herd uses. */
static VALUE native_prctl(VALUE self, VALUE option, VALUE arg) {
  int result = prctl(NUM2INT(option), NUM2ULONG(arg), 0UL, 0UL, 0UL);
  return INT2FIX(result == 0 ? 0 : errno);
}
#endif

void herd_init_prctl(VALUE herd) {
#ifdef HAVE_SYS_PRCTL_H
  VALUE linux_module = rb_define_module_under(herd, "Linux");
  VALUE native = rb_define_module_under(linux_module, "Native");
  rb_define_singleton_method(native, "prctl", native_prctl, 2);
#else
  (void)herd;
#endif
}
