# frozen_string_literal: true

module Herd
  # herd's version.
  VERSION = "0.1.0"
end
