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
 * The subset: a Hash (or a subclass) whose #each_pair is Hash's, of String
 * names and String values, every name a token (RFC 9110 tchar) that does not
 * start with "rack.", every value ASCII without a control character but tab;
 * no connection or keep-alive header; a content-length of 1 to 18 digits
 * (given twice, the same number), no content-length together with
 * transfer-encoding.
 *
 * Why C: under load the Ruby code (three regular expressions and dozens of
 * method calls, on cold caches) was a noticeable share of a worker's CPU
 * per hello-world response (docs/HTTP.md, "The parser: a strict Ruby
 * parser, and a C scanner in front of it").
 */
#include <ruby.h>
#include <ruby/encoding.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>

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
  RB_GC_GUARD(name);
  RB_GC_GUARD(value);
  return ST_CONTINUE;

refuse:
  fields->refused = 1;
  return ST_STOP;
}

/* The headers' fields into `fields`, their lines appended to `lines`; 0
 * when they are not all in the subset. */
static int collect(VALUE headers, VALUE lines, struct fields *fields) {
  /* The Ruby code calls #each_pair: one redefined anywhere (a singleton
   * method, a subclass, Hash itself patched) is its to call. */
  if (!RB_TYPE_P(headers, T_HASH) || !rb_method_basic_definition_p(CLASS_OF(headers), id_each_pair)) return 0;

  fields->lines = lines;
  fields->content_length = -1;
  fields->transfer_encoding = fields->date = fields->refused = 0;
  rb_hash_foreach(headers, add_field, (VALUE)fields);
  return !fields->refused;
}

/* Herd::HTTP::FieldLines.fill(response_headers, headers)
 * @return [Boolean] true: @lines, @content_length, @transfer_encoding and
 *   @date of response_headers are set as the Ruby code sets them; false:
 *   nothing was set, ask the Ruby code */
static VALUE fill(VALUE self, VALUE target, VALUE headers) {
  struct fields fields;
  if (!collect(headers, rb_enc_associate(rb_str_buf_new(128), rb_utf8_encoding()), &fields)) return Qfalse;

  rb_ivar_set(target, iv_lines, fields.lines);
  rb_ivar_set(target, iv_content_length, fields.content_length < 0 ? Qnil : LONG2NUM(fields.content_length));
  rb_ivar_set(target, iv_transfer_encoding, fields.transfer_encoding ? Qtrue : Qfalse);
  rb_ivar_set(target, iv_date, fields.date ? Qtrue : Qfalse);
  RB_GC_GUARD(fields.lines);
  return Qtrue;
}

/* Herd::HTTP::FieldLines.response(head, status, headers, body, closing, keep_alive = false)
 * The whole response ResponseWriter#write sends for a plain one: a status
 * with a body (200 to 999 but 204 and 304), headers in the subset, and an
 * Array (no subclass, no singleton) of at most MAX_PARTS Strings of at most
 * MAX_BODY bytes in all. Appended to `head` (the status line): the field
 * lines, content-length when the application gave neither it nor
 * transfer-encoding, `closing` ("date: ...\r\nconnection: close\r\n\r\n", or
 * "date: ...\r\n\r\n" for a connection kept open), or what follows its date
 * line when the application gave a date, then the body. With keep_alive,
 * only a response whose framing is herd's or matches the body.
 * @return [Integer, nil] the body's bytes; nil: ask the Ruby code (`head` may
 *   have been written to) */
#define MAX_PARTS 64
#define MAX_BODY (8 * 1024)
static VALUE response(int argc, VALUE *argv, VALUE self) {
  VALUE head, status, headers, body, closing, keep_alive;
  rb_scan_args(argc, argv, "51", &head, &status, &headers, &body, &closing, &keep_alive);
  if (!FIXNUM_P(status) || !RB_TYPE_P(head, T_STRING) || !RB_TYPE_P(closing, T_STRING)) return Qnil;
  rb_check_frozen(head);
  long code = FIX2LONG(status);
  if (code < 200 || code > 999 || code == 204 || code == 304) return Qnil;
  if (RB_SPECIAL_CONST_P(body) || RBASIC_CLASS(body) != rb_cArray) return Qnil;
  long parts = RARRAY_LEN(body), length = 0;
  if (parts > MAX_PARTS) return Qnil;
  for (long i = 0; i < parts; i++) {
    VALUE part = RARRAY_AREF(body, i);
    /* Exactly String: the Ruby code counts with #bytesize, which a subclass may redefine. */
    if (RB_SPECIAL_CONST_P(part) || RBASIC_CLASS(part) != rb_cString) return Qnil;
    length += RSTRING_LEN(part);
    if (length > MAX_BODY) return Qnil;
  }
  struct fields fields;
  rb_str_modify_expand(head, 256 + length); /* one allocation for the usual response */
  if (!collect(headers, head, &fields)) return Qnil;
  /* A connection kept open needs framing it can trust: none of the
   * application's transfer-encoding, its content-length only when it is
   * the body's (ResponseWriter#write_as_is decides the same). */
  if (RTEST(keep_alive) &&
      (fields.transfer_encoding || (fields.content_length >= 0 && fields.content_length != length))) return Qnil;

  if (fields.content_length < 0 && !fields.transfer_encoding) {
    char framing[48];
    int n = snprintf(framing, sizeof(framing), "content-length: %ld\r\n", length);
    rb_str_buf_cat(head, framing, n);
  }
  if (fields.date) {
    /* The closing lines without their date line: "connection: close\r\n\r\n",
     * or the empty line alone for a connection kept open. */
    const char *lines = RSTRING_PTR(closing);
    long lines_len = RSTRING_LEN(closing);
    const char *after_date = memchr(lines, '\n', lines_len);
    if (after_date == NULL) return Qnil;
    after_date++;
    rb_str_buf_cat(head, after_date, lines_len - (after_date - lines));
  } else {
    rb_str_buf_append(head, closing);
  }
  for (long i = 0; i < parts; i++) {
    VALUE part = RARRAY_AREF(body, i);
    rb_str_buf_cat(head, RSTRING_PTR(part), RSTRING_LEN(part));
    RB_GC_GUARD(part);
  }
  rb_enc_associate(head, rb_ascii8bit_encoding()); /* bytes for the socket, whatever the parts' encodings */
  RB_GC_GUARD(fields.lines);
  return LONG2NUM(length);
}

void herd_init_field_lines(VALUE http) {
  VALUE module = rb_define_module_under(http, "FieldLines");
  rb_define_singleton_method(module, "fill", fill, 2);
  rb_define_singleton_method(module, "response", response, -1);
  id_each_pair = rb_intern("each_pair");
  iv_lines = rb_intern("@lines");
  iv_content_length = rb_intern("@content_length");
  iv_transfer_encoding = rb_intern("@transfer_encoding");
  iv_date = rb_intern("@date");
}
