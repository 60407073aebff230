# frozen_string_literal: true

require "test_helper"
require "herd/http"

module Herd
  class HTTPOptionsTest < Test
    def test_defaults
      options = HTTP::Options.new

      assert_equal 8 * 1024, options.max_request_line
      assert_equal 100, options.max_header_count
      assert_equal 64 * 1024, options.max_header_bytes
      assert_nil options.max_body
      assert_equal 112 * 1024, options.body_spool_threshold
      assert_equal 30, options.read_timeout
      refute options.early_hints
      assert_same $stderr, options.errors
      assert_nil options.logger
      assert_predicate options, :frozen?
    end

    def test_overrides
      logger = ->(line) { line }
      options = HTTP::Options.new(max_body: 0, read_timeout: 0.5, early_hints: true, logger: logger)

      assert_equal [0, 0.5, true, logger], [options.max_body, options.read_timeout, options.early_hints, options.logger]
    end

    def test_unknown_option
      assert_raises(ArgumentError) { HTTP::Options.new(max_bodies: 1) }
    end

    def test_invalid_values
      {
        max_request_line: [0, -1, 1.5, nil], max_header_count: [0, "10"], max_header_bytes: [0],
        max_body: [-1, 1.5], body_spool_threshold: [-1, nil], read_timeout: [0, -1, nil, "30"],
        early_hints: [nil, "yes"], errors: [nil, Object.new], logger: [Object.new]
      }.each do |name, values|
        values.each do |value|
          error = assert_raises(Herd::ConfigError, "#{name}: #{value.inspect}") { HTTP::Options.new(name => value) }
          assert_match(/HTTP option #{name} must be/, error.message)
        end
      end
    end

    def test_logger_kinds
      lines = []
      io = StringIO.new
      HTTP::ErrorLog.new(->(line) { lines << line }, io).line("callable")
      HTTP::ErrorLog.new(nil, io).line("to errors")
      HTTP::ErrorLog.new(StringIO.new.tap { |log| def log.puts(*) = raise(IOError, "closed") }, io).line("broken logger is ignored")

      assert_equal ["herd: callable"], lines
      assert_equal "herd: to errors\n", io.string
    end
  end
end
