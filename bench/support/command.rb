# frozen_string_literal: true

require "open3"

module Bench
  # The commands a benchmark runs to set itself up (a bundle check, an app's
  # generator, a seed): their output when they succeed, the end of it in the
  # error when they fail.
  module Command
    module_function

    # @param name [String] the benchmark, as its errors name it
    # @return [String] the command's stdout
    def capture(name, env, *command, chdir:)
      out, err, status = Open3.capture3(env, *command, chdir: chdir, in: File::NULL)
      raise "#{name}: failed: #{command.join(" ")}\n#{(out + err).lines.last(20).join}" unless status.success?

      out
    end

    # @return [String, nil] the last line `bundle check` printed when the
    #   bundle of `env` is not installed, nil when it is
    def bundle_missing(env, chdir:)
      out, status = Open3.capture2e(env, "bundle", "check", chdir: chdir)
      status.success? ? nil : out.lines.last&.strip.to_s
    end
  end
end
