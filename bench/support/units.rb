# frozen_string_literal: true

module Bench
  MIB = 1048576.0 # bytes

  # Figures as the reports print them.
  module Units
    module_function

    # @return [String] bytes in MiB, with `digits` decimals
    def mib(bytes, digits = 1) = format("%.#{digits}f", bytes / MIB)
  end
end
