/*
 * herd's C extension (lib/herd/extension.rb loads it as herd/<ruby_version>/native):
 * the C counterparts of Ruby (or Fiddle) code that stays the reference, each in
 * a file of its own. HERD_C_EXTENSION=0 leaves all of them unused.
 */
#include <ruby.h>

void herd_init_head_scanner(VALUE http); /* head_scanner.c */
void herd_init_field_lines(VALUE http); /* field_lines.c */
void herd_init_final_send(VALUE http);  /* final_send.c */
void herd_init_tcp_accept(VALUE herd);  /* accept.c */
void herd_init_shared_memory(VALUE herd); /* shared_memory.c */
void herd_init_scoreboard_slots(VALUE herd); /* scoreboard_slots.c */
void herd_init_prctl(VALUE herd); /* prctl.c */

void Init_native(void) {
  VALUE herd = rb_define_module("Herd");
  VALUE http = rb_define_module_under(herd, "HTTP");
  herd_init_head_scanner(http);
  herd_init_field_lines(http);
  herd_init_final_send(http);
  herd_init_tcp_accept(herd);
  herd_init_shared_memory(herd);
  herd_init_scoreboard_slots(herd);
  herd_init_prctl(herd);
}
