# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "herd/jobs"

# The settings in which job workers differ from `herd serve`'s
# (docs/JOBS.md, "Defaults that differ"), and a config file over them.
class JobsConfigTest < Herd::Test
  def test_job_workers_defaults
    config = Herd::Jobs.config
    assert_nil config.rackup
    assert_equal false, config.timeout
    assert_equal false, config.out_of_band_gc
    assert_equal Herd::Jobs::SHUTDOWN_TIMEOUT, config.shutdown_timeout
    assert_equal 0, config.heap_nice, "a new mold prepares its heap at the workers' own priority"
    assert_equal Herd::Server::Config::DEFAULT_HEAP_NICE, Herd::Server::Config.new.heap_nice
    assert_equal({major_gc_first: true, seal_malloc: true}, config.heap_defaults,
      "a new mold starts its preparation with a major GC, and every mold seals malloc's free chunks")
    assert_equal({}, Herd::Server::Config.new.heap_defaults)
  end

  def test_a_config_file_keeps_the_job_default_unless_it_names_a_nice_value
    assert_equal 0, load("prepare_heap compact: false\n").heap_nice
    assert_equal 5, load("prepare_heap nice: 5\n").heap_nice
    assert_nil load("prepare_heap false\n").heap_nice
  end

  private

  def load(source)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "herd_sidekiq.rb")
      File.write(path, source)
      Herd::Jobs.config.tap { |config| config.load_file(path) }
    end
  end
end
