# frozen_string_literal: true

# Builds herd's C extension (herd/native: the request-head scanner, the
# response header checks, the final send, accept, the scoreboard's slots,
# shared memory and prctl). Optional: where it cannot be built (no compiler,
# no Ruby headers), or with HERD_C_EXTENSION=0 at gem install or
# `rake compile`, a Makefile that builds nothing is written instead, the gem
# installs, and herd does all of it in Ruby (and Fiddle), the reference.
require "mkmf"
require_relative "../../../lib/herd/env_switch"

if Herd::EnvSwitch.off?(ENV["HERD_C_EXTENSION"]) || !have_header("ruby/encoding.h") ||
    !have_func("rb_enc_interned_str", "ruby/encoding.h")
  File.write("Makefile", "all install clean:\n\t@echo 'herd: the C extension is not built; Ruby does its work'\n")
else
  # Linux, the BSDs: Herd::Server::TCPAccept (without it, Ruby's accept)
  have_func("accept4", ["sys/types.h", "sys/socket.h"])
  # The accept's socket without for_fd's fstat (accept.c): Ruby >= 3.3's function for it, or
  # else Ruby's IO structure to fill
  unless have_func("rb_io_open_descriptor", "ruby/io.h")
    have_func("rb_io_make_open_file", "ruby/io.h") && have_struct_member("rb_io_t", "fd", "ruby/io.h") &&
      have_struct_member("rb_io_t", "mode", "ruby/io.h")
  end
  have_func("memmem", "string.h") # HeadScanner.receive, a worker's first read parsed in C (without it, SocketReader)
  have_header("sys/prctl.h") # Linux: Herd::Linux::Native.prctl (without it, Herd::Linux calls prctl through Fiddle)
  $CFLAGS << " -O2 -std=gnu99 -Wall -Wextra -Wno-unused-parameter" # standard:disable Style/GlobalVars -- mkmf reads it
  create_makefile("herd/native")
end
