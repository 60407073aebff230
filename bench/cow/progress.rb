# frozen_string_literal: true

module CowBench
  # One line per floor and per run on stderr, as they finish.
  class Progress
    def initialize(io = $stderr)
      @io = io
    end

    def floor(floor)
      line = format("  rep %d %-8s %-16s ", floor[:rep], floor[:app], "floor")
      line += if floor[:error]
        "FAILED: #{floor[:error].lines.last}"
      else
        format("one warmed process %6.1f MiB PSS alone (%.1f sealed), its forks %.2f MiB USS each, %.1f after %d requests",
          floor[:solo_pss], floor[:sealed_pss] || 0, floor[:children].map { |child| child[:uss] }.max,
          floor[:served_children].map { |child| child[:uss] }.max, floor[:serving])
      end
      @io.puts(line)
    end

    def run(run)
      line = format("  rep %d %-8s %-16s ", run[:rep], run[:app], run[:server])
      line += run[:error] ? "FAILED: #{run[:error].lines.first}" : phase(run)
      line += format(" [inside a request: Σ PSS %.1f MiB]", run[:inside][:total_pss]) if run.dig(:inside, :total_pss)
      line += " [inside a request: #{run[:inside][:error]}]" if run.dig(:inside, :error)
      line += "; +#{run[:more][:requests]} requests: #{phase(run[:more])}" if run[:more]
      line += "  (reforks: #{run[:reforks]})" if run[:reforks]
      line += "  (stop: #{run[:stop_problems].join("; ")})" if run[:stop_problems]
      @io.puts(line)
    end

    private

    def phase(phase)
      memory = phase[:memory]
      settle = phase[:settle]
      text = format("Σ PSS %6.1f MiB (%d procs), worker %5.1f MiB (USS %4.1f), gen %s, %s, %s req/s",
        memory[:total_pss], memory[:processes], memory[:worker_pss] || 0, memory[:worker_uss] || 0,
        settle[:generation].inspect, settle[:settled] ? "settled in #{settle[:seconds]} s" : "NOT settled (#{settle[:detail]})",
        phase[:ab][:rps])
      text += " ab: #{phase[:ab][:error].lines.last.strip}" if phase[:ab][:error]
      text
    end
  end
end
