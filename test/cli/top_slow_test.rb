# frozen_string_literal: true

require "test_helper"
require "support/control_server"

# `herd top`, in a real terminal: tmux runs it, capture-pane reads the
# screen, send-keys presses q.
class TopSlowTest < Herd::ControlServerTest
  def setup
    serve_with_control(config: "workers 2\npidfile \"herd.pid\"\n")
  end

  def teardown
    system("tmux", "-S", @tmux, "kill-server", err: File::NULL) if @tmux
    super
  end

  def tmux_available!
    return if system("tmux", "-V", out: File::NULL, err: File::NULL)

    # bin/setup installs it when run as root; say so loudly rather than pass.
    warn "\n*** TopTest SKIPPED: tmux is not installed (apt-get install -y tmux, or run bin/setup as root) ***\n"
    skip "tmux is not installed"
  end

  # Starts `herd top ARGS` in a detached tmux pane of 140x40.
  def start_top(*args, term: "xterm-256color")
    @tmux = File.join(@server.dir, "tmux.sock")
    # In the config, so that a pane whose command ends at once stays to be read.
    config = File.join(@server.dir, "tmux.conf")
    File.write(config, "set-option -g remain-on-exit on\n")
    herd = [RbConfig.ruby, "-I", File.join(ROOT, "lib"), File.join(ROOT, "exe", "herd"), "top", *args]
    assert system("tmux", "-S", @tmux, "-f", config, "new-session", "-d", "-x", "140", "-y", "40", "-c", @server.dir,
      "env", "TERM=#{term}", *herd)
  end

  # history: also the lines scrolled off (tmux's "Pane is dead" line, under
  # remain-on-exit, can push a snapshot's first line up)
  def screen(history: false)
    IO.popen(["tmux", "-S", @tmux, "capture-pane", "-p", *(history ? ["-S", "-"] : [])], &:read)
  end

  def pane_dead?
    IO.popen(["tmux", "-S", @tmux, "display-message", "-p", "\#{pane_dead}"], &:read).strip == "1"
  end

  def wait_until(what, &condition)
    Herd::Waiting.wait_until(what, interval: 0.1, detail: -> { "screen:\n#{screen}" }, &condition)
  end

  def test_a_live_view_that_refreshes_and_quits_on_q
    tmux_available!
    start_top("--pidfile", "herd.pid")
    wait_until("the table") { screen.match?(/worker 1\s+0\s+\d+\s+idle/) }
    text = screen
    assert_match(/herd top — monitor #{@server.pid} at #{Regexp.escape(@address)}/, text)
    assert_match(/^mold\s+0\s+\d+\s+ready/, text)
    assert_match(/Σ PSS \d/, text)
    assert_match(/No refork or reload yet/, text)
    @server.signal("USR2")
    wait_until("the refork shown, with why") { screen.match?(/refork\s+0 -> 1\s+ready\s+[\d.]+s\s+USR2/) }
    wait_until("generation 1's workers") { screen.scan(/^worker \d\s+1\s+\d+\s+idle/).size == 2 }
    refute pane_dead?
    system("tmux", "-S", @tmux, "send-keys", "q")
    wait_until("herd top gone after q") { pane_dead? }
    refute_match(/herd top —/, screen, "the alternate screen was left")
  end

  def test_a_dumb_terminal_gets_one_snapshot
    tmux_available!
    start_top(@address, term: "dumb")
    wait_until("herd top to print once and exit") { pane_dead? }
    text = screen(history: true)
    assert_equal 1, text.scan("herd top —").size, text
    assert_match(/^worker 0\s+0/, text)
  end

  def test_a_pipe_gets_one_snapshot_and_errors_are_one_line
    out, err, status = herd_cli("top", @address)
    assert status.success?, err
    assert_match(/\Aherd top — monitor #{@server.pid}/, out)
    assert_match(/^GEN\s+PROCESSES\s+WORKERS/, out)
    refute_match(/\e\[/, out)

    _, err, status = herd_cli("top", "unix:#{@server.dir}/nope.sock")
    assert_equal 1, status.exitstatus
    assert_equal 1, err.lines.size
    assert_match(/cannot reach herd's control endpoint/, err)
    _, err, status = herd_cli("top")
    assert_equal 2, status.exitstatus
    assert_match(/missing ADDRESS or --pidfile FILE/, err)
  end
end
