# frozen_string_literal: true

require "test_helper"
require "herd/linux"

class LinuxTest < Herd::Test
  PR_GET_PDEATHSIG = 2

  def setup
    skip "prctl(2) is Linux only" unless RUBY_PLATFORM.include?("linux")
  end

  def test_prctl_goes_through_the_extension_when_it_is_built
    skip "herd's C extension is not built (`rake compile`)" unless defined?(Herd::Linux::Native)

    assert_equal Herd::Extension.unused_reason.nil?, Herd::Linux.native?
    assert Herd::Linux.available?
    assert_equal Errno::EINVAL::Errno, Herd::Linux::Native.prctl(9_999, 0), "an unknown option reports its errno"
  end

  # Both ways set the signal a child gets when its parent dies, read back
  # with PR_GET_PDEATHSIG (through Fiddle: it writes to a pointer).
  def test_parent_death_signal_is_set_through_either_path
    code = <<~RUBY
      require "herd/linux"
      require "fiddle"
      ok = Herd::Linux.parent_death_signal("KILL")
      flag = Fiddle::Pointer.malloc(Fiddle::SIZEOF_INT, Fiddle::RUBY_FREE)
      Herd::Linux.send(:prctl_function).call(#{PR_GET_PDEATHSIG}, flag.to_i, 0, 0, 0)
      puts [ok, Herd::Linux.native?, flag[0, Fiddle::SIZEOF_INT].unpack1("i")].join(" ")
    RUBY
    kill = Signal.list.fetch("KILL").to_s
    native = defined?(Herd::Linux::Native) ? "true" : "false"
    out, err, status = ruby_run(code)
    assert status.success?, err
    assert_equal ["true", native, kill], out.split
    out, err, status = ruby_run(code, env: {"HERD_C_EXTENSION" => "0"})
    assert status.success?, err
    assert_equal ["true", "false", kill], out.split
  end
end
