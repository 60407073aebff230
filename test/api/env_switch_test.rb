# frozen_string_literal: true

require "test_helper"
require "herd/env_switch"
require "herd/extension"
require "herd/cluster/lean_monitor"

# How every HERD_* on/off switch is read (docs/CONFIGURATION.md,
# "Environment variables").
class EnvSwitchTest < Herd::Test
  SWITCH = Herd::EnvSwitch
  # Neither on nor off: the switch keeps its default.
  UNEXPECTED = [nil, "", "  ", "2", "00", "fasle", "disable", "O"].freeze

  def test_off_words_turn_off_a_switch_that_is_on_by_default
    assert_reads(:off?, %w[0 false no off FALSE Off NO].push(" 0 ", "off\n"), UNEXPECTED + %w[1 true yes on])
  end

  def test_on_words_turn_on_a_switch_that_is_off_by_default
    assert_reads(:on?, %w[1 true yes on TRUE On YES].push(" 1 ", "yes\n"), UNEXPECTED + %w[0 false no off])
  end

  # `question` answers true for each of `flipping` and false for `keeping`.
  def assert_reads(question, flipping, keeping)
    flipping.each { |value| assert SWITCH.public_send(question, value), "#{value.inspect} flips it" }
    keeping.each { |value| refute SWITCH.public_send(question, value), "#{value.inspect} keeps its default" }
  end

  def test_the_switches_read_the_same_words
    refute Herd::ForkHook.prepare_heap_from_env("HERD_PREPARE_HEAP" => "off")
    assert Herd::ForkHook.prepare_heap_from_env("HERD_PREPARE_HEAP" => "fasle")
    assert_equal "HERD_HEAP_INTERNALS=No", Herd::Heap.internals_off("HERD_HEAP_INTERNALS" => "No")
    lean = Herd::Cluster::LeanMonitor
    assert_equal "HERD_LEAN_MONITOR=false", lean.ineligible(["serve"], {"HERD_LEAN_MONITOR" => "false"})
    assert_equal "plain preload", lean.ineligible(["serve"], {"HERD_NO_SUBREAPER" => "yes"})
    refute_equal "plain preload", lean.ineligible(["serve"], {"HERD_NO_SUBREAPER" => "0"})
    skip "herd's C extension is not built (`rake compile`)" unless Herd::Extension.built?
    assert_equal "HERD_C_EXTENSION=off", Herd::Extension.unused_reason("HERD_C_EXTENSION" => "off")
    assert_nil Herd::Extension.unused_reason("HERD_C_EXTENSION" => "fasle")
  end

  # The one way: no HERD_* variable (by name or by its *_ENV / *SWITCH*
  # constant) compared by hand where it is read.
  def test_lib_reads_no_switch_by_hand
    name = /"HERD_\w+"|\b[A-Z_]*(ENV|SWITCH)[A-Z_]*/
    by_hand = /\b(ENV|env)(\[(#{name})\]|\.fetch\((#{name})[,)][^)]*\)?)\S*\s*(==|!=|\.start_with\?)/
    offenders = Dir[File.join(ROOT, "lib/**/*.rb")].flat_map do |path|
      File.readlines(path).each_with_index.filter_map do |line, index|
        "#{path.delete_prefix("#{ROOT}/")}:#{index + 1}: #{line.strip}" if line.match?(by_hand)
      end
    end
    assert_empty offenders, "read HERD_* switches through Herd::EnvSwitch"
  end
end
