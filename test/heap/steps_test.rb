# frozen_string_literal: true

require "test_helper"
require "minitest/mock"
require "herd/heap/steps"

# The list of heap steps that the suites, `herd demo fork` and the docs
# print: each step runs here or says why it does not.
class HeapStepsTest < Herd::Test
  def test_every_step_runs_or_says_why_not
    steps = Herd::Heap::Steps.all({})
    assert_equal ["aging", "compaction", "major GC when due", "room for the children", "free-slot filling", "GC page descriptors", "malloc sealing", "low-priority GCs", "out-of-band GC", "fast exit"],
      steps.map(&:name)
    steps.each { |step| assert(step.runs? ? step.how : step.stepped_aside, step.to_s) }
    by_name = steps.to_h { |step| [step.name, step.stepped_aside] }
    # (Both nil where the step runs.)
    assert Herd::Heap::PageDescriptors.unsupported == by_name["GC page descriptors"], by_name["GC page descriptors"].inspect
    assert Herd::Heap::Malloc.unsupported == by_name["malloc sealing"], by_name["malloc sealing"].inspect
    assert Herd::Heap::Room.unsupported == by_name["room for the children"], by_name["room for the children"].inspect
  end

  def test_aging_is_process_warmup_where_ruby_has_it
    aging = Herd::Heap::Steps.all({}).first
    assert aging.runs?
    assert_equal Process.respond_to?(:warmup), aging.how.start_with?("Process.warmup")
  end

  # Ruby >= 3.3 says whether its next GC is a major one; the out-of-band GC
  # stands down where its GCs keep leaving one due, and on 3.1, which cannot
  # say, it never does.
  def test_the_out_of_band_gc_says_whether_it_can_stand_down_on_this_ruby
    step = Herd::Heap::Steps.all({}).find { |s| s.name == "out-of-band GC" }
    assert step.runs?, step.to_s
    need_major_known = GC.latest_gc_info.key?(:need_major_by)
    assert_equal RUBY_VERSION >= "3.3", need_major_known
    assert_equal Herd::Heap::Steps.out_of_band_gc(need_major_known), step.how
    assert_equal need_major_known, step.how.include?("stand down once"), step.to_s
    assert_equal !need_major_known, step.how.include?("never stand down"), step.to_s
  end

  def test_the_major_gc_when_due_says_what_it_reads_on_this_ruby
    step = Herd::Heap::Steps.all({}).find { |s| s.name == "major GC when due" }
    assert step.runs?, step.to_s
    assert_equal Herd::Heap::Steps.major_gc(GC.latest_gc_info.key?(:need_major_by)), step.how
    assert_match(/Ruby's next GC is a major one, or half a budget/, Herd::Heap::Steps.major_gc(true))
    assert_match(/no GC\.latest_gc_info\(:need_major_by\) before Ruby 3\.3/, Herd::Heap::Steps.major_gc(false))
  end

  def test_the_out_of_band_gc_reads_need_major_by_or_never_stands_down
    assert_match(/stand down once they keep leaving a major GC due \(GC\.latest_gc_info\(:need_major_by\)\)/, Herd::Heap::Steps.out_of_band_gc(true))
    assert_match(/never stand down \(no GC\.latest_gc_info\(:need_major_by\) before Ruby 3\.3\)/, Herd::Heap::Steps.out_of_band_gc(false))
  end

  def test_environment_switches_name_themselves
    steps = Herd::Heap::Steps.all("HERD_HEAP_INTERNALS" => "0", "HERD_FAST_EXIT" => "off")
    by_name = steps.to_h { |step| [step.name, step.stepped_aside] }
    assert_equal "HERD_HEAP_INTERNALS=0", by_name["malloc sealing"]
    assert_equal "HERD_HEAP_INTERNALS=0", by_name["GC page descriptors"]
    assert_equal "HERD_FAST_EXIT=off", by_name["fast exit"]
    assert_nil by_name["aging"]
    assert_nil by_name["out-of-band GC"], "no environment switch: the server's `out_of_band_gc` setting turns it off"
  end

  def test_the_report_names_the_ruby_and_yjit
    report = Herd::Heap::Steps.report({})
    yjit = (defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?) ? "YJIT on" : "YJIT off"
    assert_match(/\Aheap steps on #{RUBY_ENGINE} #{Regexp.escape(RUBY_VERSION)}, #{yjit}, .*malloc:\n/, report)
    assert_equal 11, report.lines.size
  end

  def test_yjit_counts_as_on_where_the_environment_turns_it_on_for_children
    skip "no YJIT in this Ruby" unless defined?(RubyVM::YJIT)
    assert_includes Herd::Heap::Steps.ruby("RUBY_YJIT_ENABLE" => "1"), "YJIT on"
  end

  # A modular GC (RUBY_GC_LIBRARY, Ruby >= 3.4) has none of the default
  # GC's generations and pages: every GC step steps aside, and a
  # preparation does nothing and says why.
  def test_under_another_gc_the_heap_is_left_alone_and_the_report_says_why
    Herd::Heap.stub(:other_gc, "the GC is mmtk, herd knows the generations and pages of Ruby's default GC only") do
      report = Herd::Heap.prepare(compact: true, fill_free_slots: true, seal_malloc: true)
      assert_equal :none, report.strategy
      refute report.compacted
      assert_equal "heap left as it is: the GC is mmtk, herd knows the generations and pages of Ruby's default GC only", report.to_s
      steps = Herd::Heap::Steps.all({})
      %w[aging compaction major\ GC\ when\ due free-slot\ filling GC\ page\ descriptors malloc\ sealing].each do |name|
        refute steps.find { |step| step.name == name }.runs?, name
      end
    end
  end

  def test_the_default_gc_is_known_by_its_name
    return assert_nil(Herd::Heap.other_gc, "no GC.config (Ruby < 3.4): the default GC") unless GC.respond_to?(:config)

    GC.stub(:config, {implementation: "default"}) { assert_nil Herd::Heap.other_gc }
    GC.stub(:config, {implementation: "mmtk"}) { assert_match(/the GC is mmtk/, Herd::Heap.other_gc) }
  end
end
