# frozen_string_literal: true

require_relative "app"
require_relative "../support/report"

module RailsBench
  # The header lines that say what the servers of a Rails bench ran (app,
  # Ruby, YJIT and how it came, malloc, gem versions), shared by the
  # reports of bench/rails, bench/refork and bench/reload. The includer has
  # @env and @runs.
  module ServersLine
    def app
      RailsBench::APPS.fetch(@env[:app_name] || "rails7")
    end

    # What the servers ran: app, Ruby, YJIT, malloc.
    def servers_line
      ruby = @env[:server_ruby] ? "`#{@env[:server_ruby]}`" : "the driver's"
      "app `#{app.name}` (#{@env[:app]}); Ruby #{ruby}; YJIT #{Bench::Report.yjit_text(@env[:yjit], @env[:yjit_env])}; " \
        "malloc #{malloc_text}"
    end

    # @return [String] the gems of the app's bench bundle, from its lock
    def versions_line
      "versions (#{app.gemfile}.lock): #{(@env[:versions] || {}).map { |name, version| "#{name} #{version}" }.join(", ")}"
    end

    def malloc_text
      rows = @runs.flat_map { |run| run[:final] || [] }.reject { |row| row[:jemalloc].nil? }
      preload = @env[:ld_preload] ? " (`LD_PRELOAD=#{@env[:ld_preload]}`)" : ""
      check = rows.empty? ? "" : ", libjemalloc mapped by #{rows.count { |row| row[:jemalloc] }} of the #{rows.size} server processes at the runs' ends"
      "#{@env[:malloc] || "glibc"}#{preload}#{check}"
    end
  end
end
