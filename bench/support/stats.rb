# frozen_string_literal: true

module Bench
  # The statistics the benchmarks report: medians with their range, since
  # on a shared machine one repetition says little, and latency percentiles.
  module Stats
    module_function

    # @return [Numeric, nil] the median (the mean of the middle two for an even count), nil for no values
    def median(values)
      return nil if values.empty?

      sorted = values.sort
      mid = sorted.size / 2
      sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
    end

    # @return [Hash] :median, :min, :max, :n
    def summary(values)
      {median: median(values), min: values.min, max: values.max, n: values.size}
    end

    # The nearest-rank percentile: the smallest value with at least `q` of
    # the values at or below it, so p100 is the maximum.
    # @param q [Float] 0 < q <= 1
    # @return [Numeric, nil] nil for no values
    def percentile(values, q)
      return nil if values.empty?

      sorted = values.sort
      sorted[[(q * sorted.size).ceil - 1, 0].max]
    end

    # "median (min–max)", each figure formatted with `format`.
    # @param stat [Hash, nil] a {summary}
    # @param format [String, #call] a format string ("%.2f") or a proc
    # @return [String] "–" for a missing or empty summary
    def range(stat, format = "%.1f")
      return "–" unless stat && stat[:n].to_i.positive?

      figure = format.respond_to?(:call) ? format : ->(value) { Kernel.format(format, value) }
      "#{figure.call(stat[:median])} (#{figure.call(stat[:min])}–#{figure.call(stat[:max])})"
    end
  end
end
