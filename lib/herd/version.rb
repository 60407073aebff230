# frozen_string_literal: true

module Herd
  VERSION = "0.1.0"
end
