# frozen_string_literal: true

require "test_helper"
require "tmpdir"

# A job's output to a stdout that is a file or a pipe (systemd, docker,
# `> log`) sits in Ruby's buffer until flushed: every way a pool worker
# ends must flush it.
class PoolStdoutTest < Herd::Test
  # The script reports, on stderr, the items whose results reached the
  # parent: their lines were written before, so they must be in the file.
  def run_with_stdout_to_file(job_body, **options)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "out.log")
      script = <<~RUBY
        require "herd"
        finished = []
        error = nil
        begin
          Herd.map(1..200, processes: 2, finish: ->(item, _index, _result) { finished << item }, **#{options.inspect}) do |i|
            $stdout.puts "line \#{i}"
            #{job_body}
            i
          end
        rescue => e
          error = e.class.name
        end
        $stderr.puts [error, finished.sort].inspect
      RUBY
      err_path = File.join(dir, "err.log")
      pid = Process.spawn(PLAIN_RUBY, RbConfig.ruby, "-I", File.join(ROOT, "lib"), "-e", script, out: path, err: err_path)
      _, status = Process.wait2(pid)
      err = File.read(err_path)
      assert status.success?, err
      error, finished = eval(err.lines.last) # standard:disable Security/Eval
      [error, finished, File.readlines(path, chomp: true)]
    end
  end

  def test_every_line_reaches_the_file
    error, finished, lines = run_with_stdout_to_file("sleep 0.001")
    assert_nil error
    assert_equal (1..200).to_a, finished
    assert_equal (1..200).map { |i| "line #{i}" }.sort, lines.sort
  end

  def test_lines_survive_when_an_error_in_another_item_stops_the_workers
    error, finished, lines = run_with_stdout_to_file("sleep 0.002; raise 'boom' if i == 150")
    assert_equal "RuntimeError", error
    assert_operator finished.size, :>, 20
    missing = (finished + [150]).map { |i| "line #{i}" } - lines
    assert_empty missing, "lines of items the workers finished before being stopped"
    assert_equal lines.uniq, lines
  end

  def test_lines_survive_with_at_exit_hooks_on
    error, finished, lines = run_with_stdout_to_file("sleep 0.001", run_at_exit: true)
    assert_nil error
    assert_equal (1..200).map { |i| "line #{i}" }.sort, lines.sort
    assert_equal 200, finished.size
  end

  def test_a_worker_whose_parent_vanished_flushes_before_it_exits
    Dir.mktmpdir do |dir|
      path = File.join(dir, "out.log")
      transport = Herd::Pool::ProcessTransport.new(Object.new.tap { |channel| def channel.write_frame(_) = raise(Errno::EPIPE) })
      pid = fork do
        $stdout.reopen(path, "w")
        $stdout.sync = false
        $stdout.puts "unflushed"
        transport.deliver([:results, 1, [], true])
        exit!(3)
      end
      _, status = Process.wait2(pid)
      assert_equal 1, status.exitstatus
      assert_equal "unflushed\n", File.read(path)
    end
  end
end
