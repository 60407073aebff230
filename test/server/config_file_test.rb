# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "herd/server/config"

class ServerConfigFileTest < Herd::Test
  def load(source)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "herd.rb")
      File.write(path, source)
      Herd::Server::Config.new.load_file(path)
    end
  end

  def test_a_typo_names_the_setting_its_line_and_a_guess
    error = assert_raises(Herd::ConfigError) { load("timeout 10\n\nworkerz 4\n") }
    assert_match(/\Aunknown setting `workerz` \(.*herd\.rb:3\); did you mean `workers`\?\z/, error.message)
    refute_match(/Config|DSL|@/, error.message, "no object dump")
  end

  def test_a_word_nothing_like_a_setting_points_to_the_docs
    error = assert_raises(Herd::ConfigError) { load("frobnicate_everything true\n") }
    assert_match(/unknown setting `frobnicate_everything` \(.*herd\.rb:1\); see docs\/CONFIGURATION\.md/, error.message)
  end

  def test_other_errors_say_where
    error = assert_raises(Herd::ConfigError) { load("workers 2\nnil.upcase\n") }
    assert_match(/herd\.rb:2: NoMethodError/, error.message)
  end

  def test_log_and_pid_files
    config = load("stdout_path 'log/out.log'\nstderr_path 'log/err.log'\npidfile 'tmp/herd.pid'\n")
    assert_equal ["log/out.log", "log/err.log", "tmp/herd.pid"], [config.stdout_path, config.stderr_path, config.pidfile]
  end

  # One declaration per setting drives the reader, the file's method, the
  # default and the check; every check keeps its message.
  MESSAGES = {
    "workers -1" => "workers must be a whole number >= 0, got -1",
    "workers :many" => "workers must be a whole number >= 0, got :many",
    "timeout 0" => "timeout must be false or a number of seconds > 0, e.g. 30; got 0",
    "spawn_timeout '3'" => %(spawn_timeout must be a number of seconds > 0, got "3"),
    "shutdown_timeout -1" => "shutdown_timeout must be a number of seconds > 0, got -1",
    "refork_after [0]" => "refork_after must be false or a list of request counts > 0, e.g. [50, 100, 1000]; got [0]",
    "refork_after true" => "refork_after must be false or a list of request counts > 0, e.g. [50, 100, 1000]; got true",
    "rollout_max_unavailable -1" => "rollout_max_unavailable must be a whole number >= 0, got -1",
    "rollout_max_surge 1.5" => "rollout_max_surge must be a whole number >= 0, got 1.5",
    "rollout_min_ready -1" => "rollout_min_ready must be a number of seconds >= 0, e.g. 5; got -1",
    "rollout_min_ready '5'" => %(rollout_min_ready must be a number of seconds >= 0, e.g. 5; got "5"),
    "rollout_max_surge 0; rollout_max_unavailable 0" => "rollout_max_unavailable and rollout_max_surge are both 0: a rollout could never " \
      "replace a worker; set rollout_max_surge 1 (replacements first) or rollout_max_unavailable 1",
    "out_of_band_gc 0" => "out_of_band_gc must be false or a number of allocations > 0, e.g. 10_000; got 0",
    "prepare_heap :yes" => "prepare_heap: true, false or a Hash of Herd::Heap.prepare options",
    "prepare_heap compactt: true" => "prepare_heap: unknown option compactt; known: #{Herd::Heap::OPTIONS.join(", ")}",
    "prepare_heap compact: :always" => "prepare_heap: compact: must be true, false or :auto, got :always"
  }.freeze

  MESSAGES.each_with_index do |(line, message), n|
    define_method("test_validation_message_#{n}") do
      require "herd/heap"
      config = load("#{line}\n")
      config.app = Object.new # no config.ru needed
      error = assert_raises(Herd::ConfigError, line) { config.validate! }
      assert_equal message, error.message
    end
  end

  def test_every_setting_has_its_default_and_its_method
    config = Herd::Server::Config.new
    assert_equal [Herd::CPU.count, 30, 30, 30, false, 0, 1, 0, true, "config.ru", nil],
      %i[workers timeout spawn_timeout shutdown_timeout refork_after rollout_max_unavailable rollout_max_surge rollout_min_ready
        prepare_heap rackup pidfile].map { |name| config.public_send(name) }
    config = load("workers 3\ntimeout 5\nrefork_after [10, 20]\nprepare_heap compact: true\nrackup 'app.ru'\naccess_log '-'\n")
    assert_equal [3, 5, [10, 20], {compact: true}, "app.ru", "-"],
      [config.workers, config.timeout, config.refork_after, config.prepare_heap, config.rackup, config.access_log]
  end

  # A rollout forks each replacement before the worker it replaces stops;
  # turning the surge off alone brings back one out, then one in.
  def test_rollout_max_unavailable_defaults_to_none_with_a_surge_and_one_without
    assert_equal [1, 0], [load("").rollout_max_surge, load("").rollout_max_unavailable]
    assert_equal [0, 1], [load("rollout_max_surge 0\n").rollout_max_surge, load("rollout_max_surge 0\n").rollout_max_unavailable]
    assert_equal 2, load("rollout_max_unavailable 2\n").rollout_max_unavailable
    assert_equal [2, 0], [load("rollout_max_surge 2\n").rollout_max_surge, load("rollout_max_surge 2\n").rollout_max_unavailable]
    config = load("rollout_max_surge 0\n")
    config.app = Object.new
    assert_same config, config.validate!
  end

  def test_the_mold_prepares_at_nice_10_unless_prepare_heap_names_a_nice_value
    assert_equal 10, load("").heap_nice
    assert_equal 10, load("prepare_heap compact: true\n").heap_nice
    assert_equal 0, load("prepare_heap nice: 0\n").heap_nice
    assert_equal 5, load("prepare_heap nice: 5\n").heap_nice
    assert_nil load("prepare_heap false\n").heap_nice
  end

  # The molds' room for the children and the workers' keeping of it go together.
  def test_workers_keep_room_unless_prepare_heap_turns_it_off
    assert load("").heap_room?
    assert load("prepare_heap compact: true\n").heap_room?
    refute load("prepare_heap room: false\n").heap_room?
    refute load("prepare_heap false\n").heap_room?
  end

  # Pitchfork's name for the hook is not herd's: refused as any unknown setting.
  def test_after_worker_fork_is_an_unknown_setting
    error = assert_raises(Herd::ConfigError) { load("after_fork { |server, worker| }\nafter_worker_fork { |server, worker| }\n") }
    assert_match(/\Aunknown setting `after_worker_fork` \(\S+:2\); did you mean `after_\w+`\?\z/, error.message)
  end
end
