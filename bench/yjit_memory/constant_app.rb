# frozen_string_literal: true

# bench/cow's constant app (100,000 constants and lookup methods, every request calls them all) under
# `bundle exec herd serve`, classified page by page as bench/yjit_memory.rb does for herd demo's app:
# BEFORE requests over 4 workers, USR2 (the busiest worker becomes the gen-1 mold, as refork_after 50
# makes it in bench/cow), then AFTER requests to the gen-1 workers. Prints, per variant, the tree at each
# moment, the gen-1 workers' pages per kind against the mold's (bench/yjit_memory/maps.rb) and what the
# probes saw of YJIT in each gen-1 process (compiled ISEQs: did the mold inherit compiled code?).
#
#   export PATH=/root/.herd/rubies/3.4.5/bin:$PATH
#   ruby bench/yjit_memory/constant_app.rb --only yjit,yjit_cold --before 200 --after 200
#   ruby bench/yjit_memory/constant_app.rb --only yjit_cold --before 600   # mold past 120 calls
#
# The finding (bench/results/yjit-constant-app-copy.md): with more than 40,000 live ISEQs YJIT 3.4 raises
# its call threshold from 30 to 120, and `--yjit-call-threshold=30` cannot stop it (30 is the value it
# tests for "not set"). A mold promoted after ~50 requests has compiled none of the 100,000 methods, so
# each worker writes every method's ISEQ body (jit_entry_calls) in glibc's heap, cold threshold or not.
# The request that takes a process past the threshold compiles all 100,000 methods at once (10+ s), so
# the config's timeout is raised (YJIT_MEM_TIMEOUT): at herd's default 30 s such workers are killed and
# replaced from the mold, and the warmest worker never gets there.
require_relative "../yjit_memory"

module ConstantAppBench
  ROOT = YjitMemoryBench::ROOT
  APP = File.join(ROOT, "bench/cow/constant_caches.ru")
  YJIT = {"RUBY_YJIT_ENABLE" => "1"}.freeze
  COLD = "--yjit-cold-threshold=1000000000"

  VARIANTS = {
    "nojit" => {"RUBY_YJIT_ENABLE" => nil},
    "yjit" => YJIT,
    "yjit_cold" => YJIT.merge("RUBYOPT" => COLD),
    # 30 is YJIT's default, so it still becomes 120 past 40,000 ISEQs; 29 stays
    "yjit_cold_call30" => YJIT.merge("RUBYOPT" => "#{COLD} --yjit-call-threshold=30"),
    "yjit_cold_call29" => YJIT.merge("RUBYOPT" => "#{COLD} --yjit-call-threshold=29"),
    "yjit_cold_no_oobgc" => YJIT.merge("RUBYOPT" => COLD, "YJIT_MEM_OOBGC" => "false"),
    "yjit_cold_no_prepare" => YJIT.merge("RUBYOPT" => COLD, "YJIT_MEM_PREPARE" => "false")
  }.freeze

  # YjitMemoryBench::Run on the constant app (herd started as bench/yjit_memory.rb starts it: ruby -I lib
  # exe/herd, no Bundler, since the probes' json would clash with the bundle's).
  class Run < YjitMemoryBench::Run
    private

    def start
      serve(APP, {"YJIT_MEM_PROBE_AT" => "1,25,50,100,119,121,150", "YJIT_MEM_TIMEOUT" => "600", "RACK_ENV" => "production"})
    end
  end

  module_function

  # What each gen-1 process's probes saw: compiled ISEQs and YJIT's allocations at its first and last probe.
  def yjit_lines(result)
    gen1 = result[:snapshots]["gen1_warm"][:rows].select { |row| row[:title].match?(/herd (mold|worker \d+) \(gen 1\)/) }
    gen1.map do |row|
      probes = result[:probes][row[:pid]] || []
      seen = probes.map do |probe|
        yjit = probe[:yjit]
        next "#{probe[:event]}: YJIT off" unless yjit[:enabled]

        "#{probe[:event]}: #{yjit[:compiled_iseq_count]} ISEQs compiled, code #{Bench::Units.mib(yjit[:code_region_size])} MiB, " \
          "yjit_alloc #{Bench::Units.mib(yjit[:yjit_alloc_size])} MiB, live ISEQs #{yjit[:live_iseq_count]}, GCs #{probe[:gc][:count]} " \
          "(major #{probe[:gc][:major_gc_count]})"
      end
      "- #{row[:title][/(mold|worker \d+)/]} (pid #{row[:pid]}, USS #{Bench::Units.mib(row[:uss])} MiB): #{seen.last(3).join("; ")}"
    end
  end

  def main(argv)
    options = {only: %w[yjit yjit_cold], before: 200, after: 200, workers: 4}
    OptionParser.new do |opts|
      opts.on("--only LIST", Array, "variants (#{VARIANTS.keys.join(",")})") { |list| options[:only] = list }
      opts.on("--before N", Integer, "requests before the refork (default 200: 50 per worker)") { |n| options[:before] = n }
      opts.on("--after N", Integer, "requests to generation 1 (default 200)") { |n| options[:after] = n }
      opts.on("--workers N", Integer) { |n| options[:workers] = n }
    end.parse!(argv)
    options[:only].each do |name|
      env = VARIANTS.fetch(name)
      warn "== #{name} #{env.inspect}, #{options[:before]} requests, USR2, #{options[:after]} requests"
      result = Run.new(name, env, requests: options[:before], workers: options[:workers], refork_requests: options[:after]).call
      puts YjitMemoryBench.summary(result), "", "YJIT in generation 1 (probes):", *yjit_lines(result)
      $stdout.flush
    end
  end
end

ConstantAppBench.main(ARGV) if $PROGRAM_NAME == __FILE__
