/*
 * Herd::Server::TCPAccept: a worker's accept on a TCP listener, and the
 * client's address, in C.
 *
 * What Herd::Server::Listener#accept does in Ruby (TCPServer#accept_nonblock,
 * then getpeername and Socket.unpack_sockaddr_in for REMOTE_ADDR) costs two
 * system calls more per connection: accept_nonblock makes an fcntl on the
 * listener each time it is called (more than once per request under load,
 * when the queue is often empty), and the peer's address, which accept4
 * already returned, is asked for again. Unicorn (kgio) does it this way too.
 * Same socket class, same flags (close-on-exec and non-blocking, as Ruby's),
 * same address text (getnameinfo, numeric, as Socket.unpack_sockaddr_in):
 * test/server/tcp_accept_test.rb compares the two.
 */
#include <ruby.h>
#include <ruby/io.h>
#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include <string.h>

void herd_init_tcp_accept(VALUE herd);

#ifdef HAVE_ACCEPT4
static ID id_for_fd, id_do_not_reverse_lookup, id_set_do_not_reverse_lookup;

/* The socket object around a descriptor accept4 just returned. for_fd
 * checks first that the descriptor is a socket, with an fstat: a system
 * call per request for what accept4 already told us. The object is made as
 * for_fd makes it, without that check: read-write, duplex, binary,
 * synchronized, and BasicSocket.do_not_reverse_lookup copied through its
 * public setter. kgio (Unicorn) did the same. Ruby 3.3 has a function for it
 * (rb_io_open_descriptor) and deprecates filling the IO structure; before,
 * the structure is filled (rb_io_make_open_file, the fd and mode members).
 * extconf.rb checks for each; without either, for_fd. */
#if defined(HAVE_RB_IO_OPEN_DESCRIPTOR)
#define HERD_DIRECT_SOCKET 1
static VALUE open_socket(VALUE klass, int fd) {
  return rb_io_open_descriptor(klass, fd, FMODE_READWRITE | FMODE_DUPLEX | FMODE_SYNC, Qnil, Qnil, NULL);
}
#elif defined(HAVE_RB_IO_MAKE_OPEN_FILE) && defined(HAVE_RB_IO_T_FD) && defined(HAVE_RB_IO_T_MODE)
#define HERD_DIRECT_SOCKET 1
static VALUE open_socket(VALUE klass, int fd) {
  VALUE socket = rb_obj_alloc(klass);
  rb_io_t *fptr = rb_io_make_open_file(socket);
  fptr->fd = fd;
  fptr->mode = FMODE_READWRITE | FMODE_DUPLEX;
  rb_io_synchronized(fptr);
  return socket;
}
#endif

static VALUE for_fd(VALUE wrap) {
  VALUE *args = (VALUE *)wrap;
#ifdef HERD_DIRECT_SOCKET
  if (args[2] == Qtrue) {
    args[3] = Qfalse; /* not owned yet: a raise here leaves it to tcp_accept */
    VALUE socket = open_socket(args[0], NUM2INT(args[1]));
    args[3] = Qtrue; /* the socket owns it now: its GC closes it */
    rb_io_ascii8bit_binmode(socket);
    if (RTEST(rb_funcall(args[0], id_do_not_reverse_lookup, 0))) {
      rb_funcall(socket, id_set_do_not_reverse_lookup, 1, Qtrue);
    }
    return socket;
  }
#endif
  return rb_funcall(args[0], id_for_fd, 1, args[1]);
}

/* Herd::Server::TCPAccept.accept(listener_fd, socket_class, direct = true)
 * As Ruby's accept_nonblock: the GVL is held throughout, so no other thread
 * can raise into this one between accept4 and the descriptor's wrapping, and
 * interrupts already pending are taken first, while no descriptor exists.
 * That needs a non-blocking listener (Listener#accept_with makes it one;
 * Ruby's accept_nonblock makes it one on each call, with the fcntl this
 * saves).
 * direct false wraps the client with socket_class.for_fd, whatever was
 * built (tests compare the two).
 * @return [Array(BasicSocket, String), nil] the client (a socket_class, as
 *   for_fd makes it) and its address (nil if it cannot be told); nil when there
 *   was no connection to take (EAGAIN, ECONNABORTED, EPROTO, EINTR)
 * @raise [SystemCallError] for any other error (EMFILE...) */
static VALUE tcp_accept(int argc, VALUE *argv, VALUE self) {
  VALUE listener, socket_class, direct;
  rb_scan_args(argc, argv, "21", &listener, &socket_class, &direct);
  int fd = NUM2INT(listener);
  rb_thread_check_ints();
  struct sockaddr_storage address;
  memset(&address, 0, sizeof(address));
  socklen_t length = (socklen_t)sizeof(address);
  int client = accept4(fd, (struct sockaddr *)&address, &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (client < 0) {
    int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK || error == ECONNABORTED || error == EPROTO ||
        error == EINTR) return Qnil;
    rb_syserr_fail(error, "accept4");
  }
  rb_update_max_fd(client);
  /* Ruby keeps the standard descriptors open across exec; so does its accept. */
  if (client <= 2) rb_fd_fix_cloexec(client);
  VALUE wrap[4] = {socket_class, INT2NUM(client), (direct == Qfalse) ? Qfalse : Qtrue, Qnil};
  int state = 0;
  VALUE socket = rb_protect(for_fd, (VALUE)wrap, &state);
  /* Something raised: a signal's handler, run as a call returned, after the
   * socket owned the descriptor (its GC closes it; closing it here could
   * close a later one that got the same number), or no memory before. The
   * direct way knows which; for_fd's raises before owning it only for no
   * memory. */
  if (state) {
    if (wrap[3] == Qfalse) close(client);
    rb_jump_tag(state);
  }

  char host[NI_MAXHOST];
  VALUE remote = Qnil;
  if (length > 0 && (address.ss_family == AF_INET || address.ss_family == AF_INET6) &&
      getnameinfo((struct sockaddr *)&address, length, host, sizeof(host), NULL, 0, NI_NUMERICHOST) == 0) {
    remote = rb_str_new_cstr(host);
  }
  return rb_assoc_new(socket, remote);
}
#endif

void herd_init_tcp_accept(VALUE herd) {
#ifdef HAVE_ACCEPT4
  VALUE server = rb_define_module_under(herd, "Server");
  VALUE module = rb_define_module_under(server, "TCPAccept");
  rb_define_singleton_method(module, "accept", tcp_accept, -1);
  id_for_fd = rb_intern("for_fd");
  id_do_not_reverse_lookup = rb_intern("do_not_reverse_lookup");
  id_set_do_not_reverse_lookup = rb_intern("do_not_reverse_lookup=");
#ifdef HERD_DIRECT_SOCKET
  rb_define_const(module, "DIRECT", Qtrue);
#else
  rb_define_const(module, "DIRECT", Qfalse);
#endif
#endif
}
