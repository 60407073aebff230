/*
 * Herd::HTTP::FinalSend: the send that ends a whole response on a TCP
 * socket, and the shutdown after it, in one call.
 *
 * ResponseWriter#write_last sends a response it has in one String with
 * MSG_MORE, so that the kernel holds its last segment, then ends the
 * connection with shutdown(SHUT_WR), which sends that segment and the FIN
 * together (ResponseWriter explains why a shutdown and not only the close).
 * In Ruby that is BasicSocket#send, which lets go of the GVL around the
 * system call, BasicSocket#shutdown and the checks around them; here it is
 * two system calls with the GVL held, which never wait (MSG_DONTWAIT), and
 * no Ruby code between them, so no exception can land between the send and
 * the shutdown.
 */
#include <ruby.h>
#include <ruby/io.h>
#include <errno.h>
#include <sys/types.h>
#include <sys/socket.h>

void herd_init_final_send(VALUE http);

#if defined(MSG_MORE) && defined(MSG_DONTWAIT) && defined(MSG_NOSIGNAL)
/* Herd::HTTP::FinalSend.call(socket, string)
 * @return [Integer] the bytes sent: all of them, and the connection was
 *   shut down for writing (a failed shutdown is ignored, as
 *   ResponseWriter#end_of_response ignores it); or fewer, 0 when the
 *   socket's buffer is full (EAGAIN), and nothing was shut down: the caller
 *   writes the rest and ends the response itself
 * @raise [SystemCallError] what send(2) failed with otherwise (EPIPE,
 *   ECONNRESET...), as BasicSocket#send raises it */
static VALUE final_send(VALUE self, VALUE io, VALUE string) {
  StringValue(string);
  int fd = rb_io_descriptor(io);
  long length = RSTRING_LEN(string);
  ssize_t sent;
  do {
    sent = send(fd, RSTRING_PTR(string), (size_t)length, MSG_MORE | MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return INT2FIX(0);
    rb_syserr_fail(errno, "send(2)");
  }
  if (sent == length) shutdown(fd, SHUT_WR);
  RB_GC_GUARD(string);
  return LONG2NUM((long)sent);
}
#endif

void herd_init_final_send(VALUE http) {
#if defined(MSG_MORE) && defined(MSG_DONTWAIT) && defined(MSG_NOSIGNAL)
  VALUE module = rb_define_module_under(http, "FinalSend");
  rb_define_singleton_method(module, "call", final_send, 2);
#endif
}
