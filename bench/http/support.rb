# frozen_string_literal: true

require_relative "../support/clock"
require_relative "../support/http_probe"
require_relative "../support/processes"
require_relative "../support/report"

module HttpBench
  ROOT = Bench::Report::ROOT
  HOST = Bench::HttpProbe::HOST
  GEM_HINT = "bundle config set --local with bench && bundle install"
end
