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
#include <ruby/thread.h>
#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

void herd_init_tcp_accept(VALUE herd);

#ifdef HAVE_ACCEPT4
static ID id_for_fd;

struct accept_call {
  int listener, client, error;
  struct sockaddr_storage address;
  socklen_t length;
};

static void *accept_without_gvl(void *data) {
  struct accept_call *call = data;
  call->client = accept4(call->listener, (struct sockaddr *)&call->address, &call->length, SOCK_CLOEXEC | SOCK_NONBLOCK);
  call->error = call->client < 0 ? errno : 0;
  return NULL;
}

static VALUE for_fd(VALUE wrap) {
  VALUE *args = (VALUE *)wrap;
  return rb_funcall(args[0], id_for_fd, 1, args[1]);
}

/* Herd::Server::TCPAccept.accept(listener_fd, socket_class)
 * The listener is non-blocking (Listener makes sure). The GVL is released
 * all the same, so that a listener someone made blocking costs a wait that
 * signals interrupt, never a process stuck holding it.
 * @return [Array(BasicSocket, String), nil] the client (a socket_class made
 *   with for_fd) and its address (nil when the client is already gone); nil
 *   when there was no connection to take (EAGAIN, ECONNABORTED, EPROTO, EINTR)
 * @raise [SystemCallError] for any other error (EMFILE...) */
static VALUE tcp_accept(VALUE self, VALUE listener, VALUE socket_class) {
  struct accept_call call;
  call.listener = NUM2INT(listener);
  call.length = (socklen_t)sizeof(call.address);
  rb_thread_call_without_gvl(accept_without_gvl, &call, RUBY_UBF_IO, NULL);
  if (call.client < 0) {
    if (call.error == EAGAIN || call.error == EWOULDBLOCK || call.error == ECONNABORTED || call.error == EPROTO ||
        call.error == EINTR) {
      rb_thread_check_ints();
      return Qnil;
    }
    rb_syserr_fail(call.error, "accept4");
  }
  rb_update_max_fd(call.client);
  VALUE wrap[2] = {socket_class, INT2NUM(call.client)};
  int state = 0;
  VALUE socket = rb_protect(for_fd, (VALUE)wrap, &state);
  if (state) {
    close(call.client);
    rb_jump_tag(state);
  }

  char host[NI_MAXHOST];
  VALUE address = Qnil;
  if ((call.address.ss_family == AF_INET || call.address.ss_family == AF_INET6) &&
      getnameinfo((struct sockaddr *)&call.address, call.length, host, sizeof(host), NULL, 0, NI_NUMERICHOST) == 0) {
    address = rb_str_new_cstr(host);
  }
  return rb_assoc_new(socket, address);
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
