# frozen_string_literal: true

require "net/http"

module PoolBench
  # The seed's three loads ("Forking and Threading in Ruby", 2015).
  module Loads
    module_function

    # The seed's LoadTest#perform: `1000.times { 1000.times { 2**3**4 } }`.
    # `rounds` scales it (1000 is the seed's).
    def cpu(rounds = 1000)
      rounds.times { 1000.times { 2**3**4 } }
      rounds
    end

    # The seed's SnoozeTest#perform was `sleep 1`.
    def snooze(seconds)
      sleep(seconds)
      seconds
    end

    # The seed's DownloadFileTest#perform, against our own server.
    # @return [Integer] bytes received
    def download(port)
      Net::HTTP.get("127.0.0.1", "/ruby-logo.png", port).bytesize
    end
  end
end
