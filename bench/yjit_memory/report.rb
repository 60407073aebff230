# frozen_string_literal: true

# Prints the probes of bench/yjit_memory.rb's results: per variant, the gen-1 mold once prepared and a
# gen-1 worker at each step: minor faults since the previous step (copy-on-write copies and new pages),
# Private_Dirty, YJIT's counters, GC counts.
#   ruby bench/yjit_memory/report.rb bench/results/yjit-memory-3.4.5.json
require "json"

data = JSON.parse(File.read(ARGV.fetch(0)), symbolize_names: true)
data[:results].each do |result|
  puts "", "### #{result[:variant]}", ""
  puts "| process | step | requests | minflt Δ | Private_Dirty MiB | compiled ISEQs | code region KiB | yjit_alloc MiB | invalidations | GCs (minor/major/compact) |"
  puts "|---|---|---|---|---|---|---|---|---|---|"
  probes = result[:probes].values.flatten
  mold = probes.find { |p| p[:event] == "mold_prepared" && p[:generation] == 1 }
  worker = probes.select { |p| p[:generation] == 1 && p[:number] == 0 && p[:event] != "mold_prepared" }
  before = probes.find { |p| p[:event] == "before_promotion" }
  [["gen-0 worker, before promotion", [before]], ["gen-1 mold, prepared", [mold]], ["gen-1 worker 0", worker]].each do |name, rows|
    previous = nil
    rows.compact.each do |p|
      y = p[:yjit]
      g = p[:gc]
      delta = previous ? p[:minflt] - previous[:minflt] : p[:minflt]
      puts "| #{name} | #{p[:event]} | #{p[:requests]} | #{delta} | #{format("%.1f", p[:smaps][:private_dirty] / 1024.0)} | " \
        "#{y[:compiled_iseq_count]} | #{y[:code_region_size].to_i / 1024} | #{format("%.1f", y[:yjit_alloc_size].to_i / 1048576.0)} | " \
        "#{y[:invalidation_count]} | #{g[:minor_gc_count]}/#{g[:major_gc_count]}/#{g[:compact_count]} |"
      previous = p
    end
  end
end
