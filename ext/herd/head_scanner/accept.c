/*
 * Herd::Server::TCPAccept: a worker's accept on a TCP listener, and the
 * client's address, in C.
 *
 * What Herd::Server::Listener#accept does in Ruby (TCPServer#accept_nonblock,
 * then getpeername and Socket.unpack_sockaddr_in for REMOTE_ADDR) costs two
 * system calls more per connection: accept_nonblock makes an fcntl on the
 * listener each time it is called (it was called 1.5 times per request under
 * load), and the peer's address, which accept4 already returned, is asked for
 * again. Unicorn (kgio) does it this way too. Same socket class, same flags
 * (close-on-exec and non-blocking, as Ruby's), same address text (getnameinfo,
 * numeric, as Socket.unpack_sockaddr_in): test/server/tcp_accept_test.rb
 * compares the two.
 */
#include <ruby.h>
#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include <string.h>

void herd_init_tcp_accept(VALUE herd);

#ifdef HAVE_ACCEPT4
static ID id_for_fd;

static VALUE for_fd(VALUE wrap) {
  VALUE *args = (VALUE *)wrap;
  return rb_funcall(args[0], id_for_fd, 1, args[1]);
}

/* Herd::Server::TCPAccept.accept(listener_fd, socket_class)
 * As Ruby's accept_nonblock: the GVL is held throughout, so no other thread
 * can raise into this one between accept4 and the descriptor's wrapping, and
 * interrupts already pending are taken first, while no descriptor exists.
 * That needs a non-blocking listener (Listener#accept_with makes it one;
 * Ruby's accept_nonblock makes it one on each call, with the fcntl this
 * saves).
 * @return [Array(BasicSocket, String), nil] the client (a socket_class made
 *   with for_fd) and its address (nil if it cannot be told); nil when there
 *   was no connection to take (EAGAIN, ECONNABORTED, EPROTO, EINTR)
 * @raise [SystemCallError] for any other error (EMFILE...) */
static VALUE tcp_accept(VALUE self, VALUE listener, VALUE socket_class) {
  int fd = NUM2INT(listener);
  rb_thread_check_ints();
  struct sockaddr_storage address;
  memset(&address, 0, sizeof(address));
  socklen_t length = (socklen_t)sizeof(address);
  int client = accept4(fd, (struct sockaddr *)&address, &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (client < 0) {
    int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK || error == ECONNABORTED || error == EPROTO || error == EINTR) return Qnil;
    rb_syserr_fail(error, "accept4");
  }
  rb_update_max_fd(client);
  VALUE wrap[2] = {socket_class, INT2NUM(client)};
  int state = 0;
  VALUE socket = rb_protect(for_fd, (VALUE)wrap, &state);
  /* for_fd raised: a signal's handler, run as the call returned, after the
   * socket owned the descriptor (its GC closes it; closing it here could
   * close a later one that got the same number), or no memory before. */
  if (state) rb_jump_tag(state);

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
  rb_define_singleton_method(module, "accept", tcp_accept, 2);
  id_for_fd = rb_intern("for_fd");
#endif
}
