# frozen_string_literal: true

module ReloadBench
  # Where the CPU of a phase went, from the sampler's `cpu: true` records:
  # each process's user + system time and minor faults, summed by role
  # (the monitor, molds and workers of the generation before the signal and
  # of the new one, forking middles), with the machine's idle time and the
  # server's CPU per response. A process born within the phase counts from
  # its fork; one that ended loses what it ran after its last sample.
  class CPUBreakdown
    # @param samples [Array<Hash>] Bench::Sampler samples with :cpu
    # @param role [Proc] title -> [role, generation] (CowBench::HERD_ROLE, ...)
    # @param generation [Integer] the new generation
    # @param throughput [Hash] ReloadBench.throughput's rates (:steady, :window5, :after)
    def initialize(samples, role, generation, throughput)
      @samples = samples.select { |sample| sample[:cpu] }
      @role = role
      @generation = generation
      @rates = {steady: throughput[:steady], window: throughput[:window5], after: throughput[:after]}
    end

    # @param phases [Hash{Symbol => Array(Float, Float)}] name => [from, to] (CLOCK_MONOTONIC)
    # @return [Hash{Symbol => Hash}] name => :seconds, :server_cpu, :cores, :ms_per_response, :idle, :roles
    def phases(**phases)
      phases.filter_map do |name, (from, to)|
        chosen = @samples.select { |sample| sample[:t].between?(from, to) }
        [name, phase(chosen, @rates[name])] if chosen.size >= 2
      end.to_h
    end

    private

    def phase(chosen, rate)
      roles = Hash.new { |hash, key| hash[key] = {cpu: 0.0, faults: 0} }
      chosen.each_cons(2) do |before, after|
        after[:cpu][:processes].each do |pid, (title, faults, cpu)|
          _, faults_before, cpu_before = before[:cpu][:processes][pid] || [nil, 0, 0.0]
          sums = roles[name(title)]
          sums[:cpu] += cpu - cpu_before
          sums[:faults] += faults - faults_before
        end
      end
      first, last = chosen.first, chosen.last
      seconds = last[:t] - first[:t]
      server = roles.values.sum { |sums| sums[:cpu] }
      busy = last[:cpu][:busy] - first[:cpu][:busy]
      idle = last[:cpu][:idle] - first[:cpu][:idle]
      {seconds: seconds.round(2), server_cpu: server.round(2), cores: (server / seconds).round(2),
       ms_per_response: rate&.positive? ? (server * 1000 / (rate * seconds)).round(2) : nil,
       idle: (busy + idle).positive? ? (idle / (busy + idle)).round(3) : nil,
       roles: roles.transform_values { |sums| {cpu: sums[:cpu].round(2), faults: sums[:faults]} }}
    end

    def name(title)
      role, generation = @role.call(title)
      return role.to_s if generation.nil? || role == :monitor

      "#{role} (#{(generation >= @generation) ? "new" : "old"})"
    end
  end
end
