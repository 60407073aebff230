/*
 * Herd::HTTP::HeadScanner: the common request head, parsed in C.
 *
 * A fast path in front of Herd::HTTP::Parser (lib/herd/http/parser.rb), which
 * stays the reference: this scanner accepts only a strict, boring subset of
 * what the Ruby parser accepts, and for that subset returns exactly the
 * Request the Ruby parser would (test/http/head_scanner_test.rb checks it by
 * fuzzing both). For everything else -- every error, every request the
 * subset leaves out -- it returns nil and the Ruby parser decides, so a
 * refusal is always the Ruby parser's, with its status and message.
 *
 * The subset: one of GET POST HEAD PUT DELETE PATCH OPTIONS; an origin-form
 * target of visible ASCII without '#'; HTTP/1.0 to 1.9 (1.2 and up taken as 1.1); header lines
 * "name: value" whose names are tokens without '_', each name at most once,
 * no Transfer-Encoding and no Expect; a Content-Length of 1 to 18 digits; a
 * Host that is a reg-name with an optional port (an HTTP/1.1 request must
 * have one); no control character anywhere but the CRLFs.
 *
 * Why C: under load the Ruby parser cost a worker far more than on warm
 * caches (its regexes and method calls), a large share of its user time on
 * a hello-world request (docs/HTTP.md, "The parser: a strict Ruby parser,
 * and a C scanner in front of it").
 */
#include <ruby.h>
#include <ruby/encoding.h>
#include <ruby/io.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>

/* Herd::HTTP::Parser::MAX_HEADER_NAME: a longer name is the Ruby parser's 431. */
#define MAX_NAME 256
/* SocketReader::READ_SIZE: a first read of this size may have left more behind. */
#define RECEIVE_SIZE (16 * 1024)
/* SocketReader::MAX_EMPTY_LINES: the empty lines (CRLF) dropped before a head
 * (RFC 9112 §2.2); a read with more is the SocketReader's to refuse. */
#define MAX_EMPTY_LINES 4

static VALUE request_class;  /* Herd::HTTP::Request */
static VALUE methods;        /* frozen Array of the method Strings the Ruby parser shares */
static VALUE version_11, version_10, empty_query;
static VALUE key_request_method, key_path_info, key_query_string, key_server_protocol;

static const char *method_names[] = {"GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"};
#define METHOD_COUNT 7

/* RFC 9110 tchar, less '_' (the Ruby parser drops such headers: its nil env key). */
static int name_char(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  return c != 0 && strchr("!#$%&'*+-.^`|~", c) != NULL;
}

/* Bytes the Ruby parser refuses anywhere in a head (its CONTROL), plus CR and LF,
 * which here may only end a line. */
static int control_char(unsigned char c) {
  return c < 0x20 ? c != '\t' : c == 0x7f;
}

static int hex_digit(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A reg-name (RFC 3986 unreserved, sub-delims, %HH), non-empty, and an optional
 * port as Herd::HTTP::Grammar::PORT takes it: ':', zeros, then nothing or a
 * number from 1 to 65535. IP literals are left to the Ruby parser. */
static int simple_host(const unsigned char *p, long len) {
  long i = 0;
  while (i < len && p[i] != ':') {
    unsigned char c = p[i];
    if (c == '%') {
      if (i + 2 >= len || !hex_digit(p[i + 1]) || !hex_digit(p[i + 2])) return 0;
      i += 3;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          strchr("-._~!$&'()*+,;=", c) != NULL) || c == 0) return 0;
    i++;
  }
  if (i == 0) return 0;
  if (i == len) return 1;
  i++; /* the colon */
  while (i < len && p[i] == '0') i++;
  long digits = len - i, port = 0;
  if (digits > 5) return 0;
  for (; i < len; i++) {
    if (p[i] < '0' || p[i] > '9') return 0;
    port = port * 10 + (p[i] - '0');
  }
  return port <= 65535;
}

/* The env key of a header name, as Herd::HTTP::Parser.env_key makes it, as an
 * interned (frozen, deduplicated) String: no allocation once it exists. */
static VALUE env_key(const unsigned char *name, long len, int *special) {
  char buffer[MAX_NAME + 5];
  long offset = 5;
  memcpy(buffer, "HTTP_", 5);
  for (long i = 0; i < len; i++) {
    unsigned char c = name[i];
    buffer[offset + i] = (c == '-') ? '_' : ((c >= 'a' && c <= 'z') ? (char)(c - 32) : (char)c);
  }
  const char *key = buffer;
  long key_len = len + 5;
  *special = 0;
  if ((len == 12 && memcmp(buffer + 5, "CONTENT_TYPE", 12) == 0) ||
      (len == 14 && memcmp(buffer + 5, "CONTENT_LENGTH", 14) == 0)) {
    key += 5;
    key_len -= 5;
    *special = (len == 14) ? 'L' : 'T';
  } else if (len == 4 && memcmp(buffer + 5, "HOST", 4) == 0) {
    *special = 'H';
  } else if ((len == 17 && memcmp(buffer + 5, "TRANSFER_ENCODING", 17) == 0) ||
             (len == 6 && memcmp(buffer + 5, "EXPECT", 6) == 0)) {
    *special = 'X';
  }
  return rb_enc_interned_str(key, key_len, rb_utf8_encoding());
}

/* A Rack env key, frozen and interned as Ruby's own literals are. */
static VALUE env_constant(const char *name) {
  VALUE key = rb_enc_interned_str_cstr(name, rb_utf8_encoding());
  rb_gc_register_mark_object(key);
  return key;
}

static VALUE binary(const unsigned char *p, long len) {
  return rb_str_new((const char *)p, len);
}

/* The scan of a whole head at p (len bytes, ending with the empty line), its
 * header fields set in `headers` (a new Hash, or a copy of an env template).
 * With env set, the request line's env entries are set there too: the Hash
 * is then the request's Rack env but for what the connection adds.
 * @return [Herd::HTTP::Request, nil] nil: ask the Ruby parser */
static VALUE scan_head(const unsigned char *p, long len, long max_headers, VALUE headers, int env) {
  if (len < 4 || memcmp(p + len - 4, "\r\n\r\n", 4) != 0) return Qnil;

  /* Request line: METHOD SP target SP HTTP/1.x CRLF */
  long i = 0, method_index = -1;
  for (long m = 0; m < METHOD_COUNT; m++) {
    long n = (long)strlen(method_names[m]);
    if (len > n && memcmp(p, method_names[m], n) == 0 && p[n] == ' ') {
      method_index = m;
      i = n + 1;
      break;
    }
  }
  if (method_index < 0 || i >= len || p[i] != '/') return Qnil;
  long target_start = i, query_at = -1;
  while (i < len && p[i] != ' ') {
    unsigned char c = p[i];
    if (c < 0x21 || c > 0x7e || c == '#') return Qnil;
    if (c == '?' && query_at < 0) query_at = i;
    i++;
  }
  long target_end = i;
  /* HTTP/1.2 to 1.9 are 1.1 (RFC 9112 §2.3: the highest minor herd speaks), as in Ruby. */
  if (i + 10 >= len || memcmp(p + i, " HTTP/1.", 8) != 0 || p[i + 8] < '0' || p[i + 8] > '9' ||
      p[i + 9] != '\r' || p[i + 10] != '\n') return Qnil;
  VALUE version = (p[i + 8] == '0') ? version_10 : version_11;
  i += 11;

  /* Header lines, until the empty one. */
  long count = 0, content_length = -1;
  int host_seen = 0;
  while (!(p[i] == '\r' && p[i + 1] == '\n')) {
    if (++count > max_headers) return Qnil;
    long name_start = i;
    while (i < len && name_char(p[i])) i++;
    long name_len = i - name_start;
    if (name_len == 0 || name_len > MAX_NAME || i >= len || p[i] != ':') return Qnil;
    int special;
    VALUE key = env_key(p + name_start, name_len, &special);
    if (special == 'X' || !NIL_P(rb_hash_lookup2(headers, key, Qnil))) return Qnil;
    i++; /* the colon */
    long value_start = i;
    while (i < len && p[i] != '\r') {
      if (p[i] != '\t' && control_char(p[i])) return Qnil;
      i++;
    }
    if (i + 1 >= len || p[i + 1] != '\n') return Qnil;
    long value_end = i;
    i += 2;
    while (value_start < value_end && (p[value_start] == ' ' || p[value_start] == '\t')) value_start++;
    while (value_end > value_start && (p[value_end - 1] == ' ' || p[value_end - 1] == '\t')) value_end--;
    const unsigned char *value = p + value_start;
    long value_len = value_end - value_start;
    if (special == 'L') {
      if (value_len < 1 || value_len > 18) return Qnil;
      content_length = 0;
      for (long d = 0; d < value_len; d++) {
        if (value[d] < '0' || value[d] > '9') return Qnil;
        content_length = content_length * 10 + (value[d] - '0');
      }
    } else if (special == 'H') {
      if (!simple_host(value, value_len)) return Qnil;
      host_seen = 1;
    }
    rb_hash_aset(headers, key, binary(value, value_len));
    if (i + 1 >= len) return Qnil;
  }
  if (i + 2 != len) return Qnil; /* the empty line is the head's end */
  if (!host_seen && version == version_11) return Qnil;

  VALUE target = binary(p + target_start, target_end - target_start);
  VALUE path, query;
  if (query_at < 0) {
    path = target;
    query = empty_query;
  } else {
    path = binary(p + target_start, query_at - target_start);
    query = binary(p + query_at + 1, target_end - query_at - 1);
  }
  VALUE method = rb_ary_entry(methods, method_index);
  if (env) {
    rb_hash_aset(headers, key_request_method, method);
    rb_hash_aset(headers, key_path_info, path);
    rb_hash_aset(headers, key_query_string, query);
    rb_hash_aset(headers, key_server_protocol, version);
  }
  return rb_struct_new(request_class, method, target, path, query, version, headers,
                       content_length < 0 ? Qnil : LONG2NUM(content_length), Qfalse, Qfalse);
}

/* @param head [String] from the request line to the empty line included
 * @param max_header_count [Integer]
 * @return [Herd::HTTP::Request, nil] nil: ask the Ruby parser */
static void check_setup(void) {
  if (NIL_P(request_class)) rb_raise(rb_eRuntimeError, "Herd::HTTP::HeadScanner.setup first (herd/http/parser does)");
}

static VALUE scan(VALUE self, VALUE head, VALUE max_header_count) {
  Check_Type(head, T_STRING);
  check_setup();
  return scan_head((const unsigned char *)RSTRING_PTR(head), RSTRING_LEN(head), NUM2LONG(max_header_count),
                   rb_hash_new(), 0);
}

/* Herd::HTTP::HeadScanner.receive(socket, env_template, max_request_line, max_header_bytes, max_header_count)
 *
 * A connection's first read, and its parse when it is the common case: one
 * recv(2) of what the socket holds, and when that is exactly one whole head
 * (nothing after it, up to MAX_EMPTY_LINES empty lines before it), within
 * the size limits, and a head scan_head takes,
 * the Request, its headers Hash the Rack env already: a copy of
 * env_template (EnvBuilder#template: the constant entries, the listener's,
 * and a placeholder for each entry set per request, so that setting them
 * never grows the table), the header fields, and REQUEST_METHOD, PATH_INFO,
 * QUERY_STRING and SERVER_PROTOCOL. What a worker's Ruby did for it, the
 * reader's first look, the head's copy and checks, the scan and the env's
 * twenty entries added to a Hash sized for two, cost it several
 * microseconds per request.
 *
 * MSG_DONTWAIT: the GVL is held and the call never waits.
 * @return [Herd::HTTP::Request] the common case
 * @return [String] the bytes read (binary) otherwise: a partial head, a head
 *   with a body or another request behind it, one too large or one the Ruby
 *   parser must decide; the caller's SocketReader starts with them
 * @return [nil] nothing was read: no bytes yet (EAGAIN), end of file or an
 *   error, which the SocketReader's own read finds again */
#ifdef HAVE_MEMMEM
static VALUE receive(VALUE self, VALUE io, VALUE template, VALUE max_request_line, VALUE max_header_bytes,
                     VALUE max_header_count) {
  Check_Type(template, T_HASH);
  check_setup();
  int fd = rb_io_descriptor(io);
  long max_line = NUM2LONG(max_request_line), max_fields = NUM2LONG(max_header_bytes);
  long max_headers = NUM2LONG(max_header_count);
  unsigned char buffer[RECEIVE_SIZE];
  ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
  if (n <= 0) return Qnil;
  /* The empty lines a client may send before its head (after a POST body on
   * a kept connection), dropped as the SocketReader drops them. */
  const unsigned char *head = buffer;
  ssize_t head_len = n;
  for (int lines = 0; lines < MAX_EMPTY_LINES && head_len >= 2 && head[0] == '\r' && head[1] == '\n'; lines++) {
    head += 2;
    head_len -= 2;
  }
  if (n < (ssize_t)sizeof(buffer) && head_len >= 4) {
    /* The same limits as SocketReader#check_head_size, on the same bytes. */
    const unsigned char *end = memmem(head, (size_t)head_len, "\r\n\r\n", 4);
    const unsigned char *line_end = memmem(head, (size_t)head_len, "\r\n", 2);
    if (end == head + head_len - 4 && line_end - head <= max_line && head_len - (line_end - head) - 4 <= max_fields) {
      VALUE request = scan_head(head, (long)head_len, max_headers, rb_hash_dup(template), 1);
      if (!NIL_P(request)) return request;
    }
  }
  return rb_str_new((const char *)buffer, n);
}
#endif

/* Herd::HTTP::HeadScanner.setup(Request, methods, "HTTP/1.1", "HTTP/1.0", "")
 * The Ruby parser's own frozen Strings, so both return the same objects. */
static VALUE setup(VALUE self, VALUE request, VALUE method_strings, VALUE v11, VALUE v10, VALUE empty) {
  Check_Type(method_strings, T_ARRAY);
  if (RARRAY_LEN(method_strings) != METHOD_COUNT) rb_raise(rb_eArgError, "%d method strings expected", METHOD_COUNT);
  for (long m = 0; m < METHOD_COUNT; m++) {
    VALUE name = rb_ary_entry(method_strings, m);
    Check_Type(name, T_STRING);
    if (RSTRING_LEN(name) != (long)strlen(method_names[m]) ||
        memcmp(RSTRING_PTR(name), method_names[m], RSTRING_LEN(name)) != 0)
      rb_raise(rb_eArgError, "method strings out of order: expected %s", method_names[m]);
  }
  request_class = request;
  methods = rb_ary_freeze(rb_ary_dup(method_strings));
  version_11 = v11;
  version_10 = v10;
  empty_query = empty;
  rb_gc_register_mark_object(request_class);
  rb_gc_register_mark_object(methods);
  rb_gc_register_mark_object(version_11);
  rb_gc_register_mark_object(version_10);
  rb_gc_register_mark_object(empty_query);
  return Qnil;
}

void herd_init_head_scanner(VALUE http) {
  VALUE scanner = rb_define_module_under(http, "HeadScanner");
  rb_define_singleton_method(scanner, "scan", scan, 2);
  rb_define_singleton_method(scanner, "setup", setup, 5);
#ifdef HAVE_MEMMEM
  rb_define_singleton_method(scanner, "receive", receive, 5);
#endif
  key_request_method = env_constant("REQUEST_METHOD");
  key_path_info = env_constant("PATH_INFO");
  key_query_string = env_constant("QUERY_STRING");
  key_server_protocol = env_constant("SERVER_PROTOCOL");
  request_class = methods = version_11 = version_10 = empty_query = Qnil;
}
