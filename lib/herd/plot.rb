# frozen_string_literal: true

require_relative "plot/recording"
require_relative "plot/svg"

module Herd
  # Pictures of recorded memory (`herd mem --record`, `herd plot`).
  module Plot
  end
end
