# frozen_string_literal: true

require "json"

# In-process probe for bench/yjit_memory.rb: the config (bench/yjit_memory/herd.rb) calls it from herd's
# hooks. Each call appends one JSON line to $YJIT_MEM_PROBE_DIR/PID.jsonl: YJIT's runtime_stats (the keys
# available without --yjit-stats), GC.stat counts, minor page faults (each copy-on-write copy is one) and
# smaps_rollup. Reads only what it writes out; allocates a few hundred objects per call.
module YjitMemoryProbe
  YJIT_KEYS = %i[code_region_size inline_code_size outlined_code_size freed_code_size live_page_count yjit_alloc_size
    compiled_iseq_count compiled_block_count compiled_branch_count invalidation_count invalidate_method_lookup
    invalidate_bop_redefined invalidate_constant_state_bump invalidate_constant_ic_fill invalidate_no_singleton_class
    invalidate_ep_escape code_gc_count live_iseq_count].freeze
  GC_KEYS = %i[count minor_gc_count major_gc_count compact_count heap_live_slots heap_free_slots heap_eden_pages
    total_allocated_objects old_objects].freeze

  module_function

  def dir
    ENV["YJIT_MEM_PROBE_DIR"]
  end

  # @param event [String] where it was called
  # @param info [Object, nil] herd's WorkerInfo or MoldInfo
  def record(event, info = nil)
    return unless dir

    line = {
      t: Process.clock_gettime(Process::CLOCK_MONOTONIC).round(3), pid: Process.pid, event: event,
      generation: info.respond_to?(:generation) ? info.generation : nil,
      number: info.respond_to?(:number) ? info.number : nil,
      requests: info.respond_to?(:requests) ? info.requests : nil,
      minflt: minflt, smaps: rollup, gc: GC.stat.slice(*GC_KEYS), yjit: yjit
    }
    File.open(File.join(dir, "#{Process.pid}.jsonl"), "a") { |file| file.puts(JSON.generate(line)) }
  rescue SystemCallError => e
    warn "yjit_memory probe: #{e.class}: #{e.message}"
  end

  def yjit
    return {enabled: false} unless defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?

    RubyVM::YJIT.runtime_stats.slice(*YJIT_KEYS).merge(enabled: true)
  end

  # Minor faults of this process so far (field 10 of /proc/self/stat).
  def minflt
    File.read("/proc/self/stat").split(") ", 2).last.split[7].to_i
  end

  # kB fields of smaps_rollup.
  def rollup
    File.read("/proc/self/smaps_rollup").scan(/^(Rss|Pss|Private_Dirty|Private_Clean|Shared_Dirty|Shared_Clean):\s+(\d+) kB/)
      .to_h { |key, kb| [key.downcase, kb.to_i] }
  end
end
