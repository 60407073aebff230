/*
 * Herd::HTTP::FieldLines: the common response headers, checked and written
 * out in C.
 *
 * A fast path in front of Herd::HTTP::ResponseHeaders
 * (lib/herd/http/response_headers.rb), which stays the reference: this takes
 * only a strict, boring subset of the headers Ruby takes, and for that subset
 * sets exactly what the Ruby code would set (test/http/field_lines_test.rb
 * checks it by fuzzing both). For everything else it sets nothing and returns
 * false, and the Ruby code serializes the headers or refuses them with its
 * own message.
 *
 * The subset: a Hash (or a subclass that keeps Hash#each_pair) of String
 * names and String values, every name a token (RFC 9110 tchar) that does not
 * start with "rack.", every value ASCII without a control character but tab;
 * no connection or keep-alive header; a content-length of 1 to 18 digits
 * (given twice, the same number), no content-length together with
 * transfer-encoding.
 *
 * Why C: under load the Ruby code cost a worker about 4 us of CPU per
 * hello-world response (three regular expressions and a dozen method calls
 * on cold caches), a tenth of its user time.
 */
#include <ruby.h>
#include <ruby/encoding.h>
#include <string.h>
#include <strings.h>

void herd_init_field_lines(VALUE http);

static ID id_each_pair, iv_lines, iv_content_length, iv_transfer_encoding, iv_date;

struct fields {
  VALUE lines;
  long content_length; /* -1: none */
  int transfer_encoding, date, refused;
};

/* RFC 9110 tchar. */
static int tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* An ASCII-compatible String of ASCII bytes, none of them a control
 * character but tab (ResponseHeaders' INVALID_FIELD_VALUE). */
static int plain_value(VALUE value) {
  if (!RB_TYPE_P(value, T_STRING) || !rb_enc_asciicompat(rb_enc_get(value))) return 0;
  const unsigned char *p = (const unsigned char *)RSTRING_PTR(value);
  long len = RSTRING_LEN(value);
  for (long i = 0; i < len; i++) {
    unsigned char c = p[i];
    if (c >= 0x7f || (c < 0x20 && c != '\t')) return 0;
  }
  return 1;
}

static int same_name(const char *name, long len, const char *expected) {
  return len == (long)strlen(expected) && strncasecmp(name, expected, len) == 0;
}

static int add_field(VALUE name, VALUE value, VALUE arg) {
  struct fields *fields = (struct fields *)arg;
  if (!RB_TYPE_P(name, T_STRING) || !rb_enc_asciicompat(rb_enc_get(name)) || !plain_value(value)) goto refuse;
  const char *n = RSTRING_PTR(name);
  long n_len = RSTRING_LEN(name);
  if (n_len == 0 || (n_len >= 5 && memcmp(n, "rack.", 5) == 0)) goto refuse;
  for (long i = 0; i < n_len; i++) {
    if (!tchar((unsigned char)n[i])) goto refuse;
  }
  if (same_name(n, n_len, "connection") || same_name(n, n_len, "keep-alive")) goto refuse;

  const char *v = RSTRING_PTR(value);
  long v_len = RSTRING_LEN(value);
  if (same_name(n, n_len, "content-length")) {
    if (v_len < 1 || v_len > 18) goto refuse;
    long length = 0;
    for (long i = 0; i < v_len; i++) {
      if (v[i] < '0' || v[i] > '9') goto refuse;
      length = length * 10 + (v[i] - '0');
    }
    if (fields->content_length >= 0 && fields->content_length != length) goto refuse;
    fields->content_length = length;
  } else if (same_name(n, n_len, "transfer-encoding")) {
    fields->transfer_encoding = 1;
  } else if (same_name(n, n_len, "date")) {
    fields->date = 1;
  }
  if (fields->content_length >= 0 && fields->transfer_encoding) goto refuse;

  rb_str_buf_cat(fields->lines, n, n_len);
  rb_str_buf_cat(fields->lines, ": ", 2);
  rb_str_buf_cat(fields->lines, v, v_len);
  rb_str_buf_cat(fields->lines, "\r\n", 2);
  return ST_CONTINUE;

refuse:
  fields->refused = 1;
  return ST_STOP;
}

/* Herd::HTTP::FieldLines.fill(response_headers, headers)
 * @return [Boolean] true: @lines, @content_length, @transfer_encoding and
 *   @date of response_headers are set as the Ruby code sets them; false:
 *   nothing was set, ask the Ruby code */
static VALUE fill(VALUE self, VALUE target, VALUE headers) {
  if (!RB_TYPE_P(headers, T_HASH)) return Qfalse;
  VALUE klass = rb_obj_class(headers);
  if (klass != rb_cHash && !rb_method_basic_definition_p(klass, id_each_pair)) return Qfalse;

  struct fields fields = {rb_enc_associate(rb_str_buf_new(128), rb_utf8_encoding()), -1, 0, 0, 0};
  rb_hash_foreach(headers, add_field, (VALUE)&fields);
  RB_GC_GUARD(fields.lines);
  if (fields.refused) return Qfalse;

  rb_ivar_set(target, iv_lines, fields.lines);
  rb_ivar_set(target, iv_content_length, fields.content_length < 0 ? Qnil : LONG2NUM(fields.content_length));
  rb_ivar_set(target, iv_transfer_encoding, fields.transfer_encoding ? Qtrue : Qfalse);
  rb_ivar_set(target, iv_date, fields.date ? Qtrue : Qfalse);
  return Qtrue;
}

void herd_init_field_lines(VALUE http) {
  VALUE module = rb_define_module_under(http, "FieldLines");
  rb_define_singleton_method(module, "fill", fill, 2);
  id_each_pair = rb_intern("each_pair");
  iv_lines = rb_intern("@lines");
  iv_content_length = rb_intern("@content_length");
  iv_transfer_encoding = rb_intern("@transfer_encoding");
  iv_date = rb_intern("@date");
}
