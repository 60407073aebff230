# frozen_string_literal: true

require "rbconfig"
require_relative "../env_switch"
require_relative "ruby_gc_defaults"
require_relative "../ruby_gc_settings"

module Herd
  module Cluster
    # `herd serve` re-executes itself as `ruby --disable-gems` before it
    # loads anything else, so the monitor carries neither RubyGems nor
    # Bundler. The monitor never loads the app, and its pages are the one
    # part of the tree no other process shares: in a monitor that loaded
    # them, Bundler and RubyGems were most of its PSS, because every mold
    # rewrites the pages it inherited (docs/COPY_ON_WRITE.md, "Reforking
    # (`herd serve`)").
    #
    # The mold, forked from the lean monitor, puts back what the command had
    # loaded before it loads the app ({.restore!}): RubyGems, `bundler/setup`
    # with the same Gemfile, the same `$LOAD_PATH` and `RUBYOPT`. Its copy is
    # shared with its workers, as before.
    #
    # The re-exec also gives the tree herd's Ruby GC settings
    # ({RubyGCDefaults}), those the user did not set; Ruby reads them only
    # at start. They leave ENV with the rest of the description, so the
    # app's own subprocesses do not inherit them.
    #
    # Skipped (the monitor keeps what the command loaded) when
    # `HERD_LEAN_MONITOR=0` or `--no-lean-monitor` is given, with
    # `--no-subreaper` (the monitor loads the app itself), off Linux, in a
    # Ruby started without RubyGems, or when `RUBYOPT` requires more than
    # `bundler/setup` (those libraries may need RubyGems).
    # @api private
    module LeanMonitor
      BOOT_ENV = "HERD_LEAN_MONITOR_BOOT"
      SWITCH_ENV = "HERD_LEAN_MONITOR"
      FLAG = "--no-lean-monitor"
      LIB = File.expand_path("../..", __dir__)
      EXE = File.expand_path("../../../exe/herd", __dir__)
      BUNDLER_SETUP = %r{\A-r\s*(\S*/)?bundler/setup(\.rb)?\z}
      # Libraries the monitor loads that are not in every Ruby's own library.
      MONITOR_GEMS = %w[fiddle].freeze

      class << self
        # @return [Symbol, nil] :lean (this process was re-executed without
        #   RubyGems), :restored (it was, then put them back), nil (never re-executed)
        attr_reader :state

        # @return [Hash{String => String}] the Ruby GC settings the re-exec
        #   added ({RubyGCDefaults}); empty when it added none
        def ruby_gc
          @ruby_gc || {}
        end

        # @return [Array<String>] gems of the bundle ("optparse 0.4.0") whose
        #   files this process had already loaded from Ruby's own library
        #   before {.restore!}: the app runs Ruby's version, not the Gemfile's
        def shadowed
          @shadowed || []
        end

        # Says in the monitor's log how it was started and the GC settings
        # the re-exec gave the tree.
        # @param log [Log]
        def describe(log, role)
          case state
          when :lean
            log.info(role, "lean: re-executed without RubyGems and Bundler, the mold loads them " \
              "(#{FLAG} or #{SWITCH_ENV}=0 keeps them here)")
          when :restored
            log.info(role, "the config file needs a gem: RubyGems and Bundler loaded in the monitor too")
          end
          return if ruby_gc.empty?

          log.info(role, "Ruby's GC: #{RubyGCDefaults.describe(ruby_gc)} for every process of the server " \
            "(herd's default; set it in the environment to choose another value)")
        end

        # Re-executes `herd ARGV` without RubyGems unless {.ineligible}
        # gives a reason; returns only then (or when exec itself failed).
        # @param argv [Array<String>] the arguments of `herd`, command first
        # @param env [Hash] the environment (tests pass their own)
        # @return [String, nil] why not, when it did not
        def reexec(argv, env: ENV)
          reason = ineligible(argv, env)
          return reason if reason

          Kernel.exec(lean_env(env), RbConfig.ruby, "--disable-gems", *load_path_flags, EXE, *argv)
        rescue SystemCallError => e
          "exec failed: #{e.message}"
        end

        # In the re-executed process: takes the description of the
        # command's environment out of ENV (children must not inherit it)
        # and puts `RUBYOPT` back as it was, for the app's own subprocesses.
        # @return [Boolean] whether this process is the lean one
        def adopt!(env: ENV)
          payload = env.delete(BOOT_ENV)
          return false unless payload

          @boot = Marshal.load(payload.unpack1("m0")) # rubocop:disable Security/MarshalLoad -- written by our own exec
          @boot[:rubyopt] ? env["RUBYOPT"] = @boot[:rubyopt] : env.delete("RUBYOPT")
          # Ruby has read them by now; the command's environment had none.
          @ruby_gc = @boot.fetch(:ruby_gc, {})
          @ruby_gc.each_key { |name| env.delete(name) }
          RubyGCSettings.taken_out(@ruby_gc)
          @state = :lean
          true
        end

        # Loads back what the command had loaded before the re-exec:
        # RubyGems, `bundler/setup` with its Gemfile, the `$LOAD_PATH`.
        # The mold calls it before the app; the monitor only when its own
        # config file needs a gem. Does nothing in a process never re-executed.
        # @return [Boolean] whether anything was loaded
        def restore!
          boot = @boot
          return false unless boot

          @boot = nil
          loaded = $LOADED_FEATURES.dup
          require "rubygems" if boot[:rubygems]
          if boot[:bundler]
            ENV["BUNDLE_GEMFILE"] ||= boot[:gemfile] if boot[:gemfile]
            require "bundler/setup"
            @shadowed = shadowed_gems(loaded)
          end
          $LOAD_PATH.replace(boot[:load_path] | $LOAD_PATH)
          @state = :restored if @state == :lean
          true
        end

        # herd's lib, and the gem directories of what the monitor requires
        # that is not in Ruby's own library: Ruby >= 4.0 ships fiddle as a
        # bundled gem, which `--disable-gems` leaves off the load path.
        # @param found [Hash{String => String, nil}] feature => the file it resolves to
        # @return [Array<String>] -I flags
        def load_path_flags(found = MONITOR_GEMS.to_h { |name| [name, $LOAD_PATH.resolve_feature_path(name)&.last] })
          own = [RbConfig::CONFIG["rubylibdir"], RbConfig::CONFIG["rubyarchdir"]].map { |dir| "#{dir}/" }
          from_gems = found.select { |_, path| path && own.none? { |dir| path.start_with?(dir) } }.keys
          dirs = from_gems.flat_map do |name|
            (Gem.loaded_specs[name] || Gem::Specification.find_by_name(name)).full_require_paths
          end
          [LIB, *dirs].uniq.flat_map { |dir| ["-I", dir] }
        rescue LoadError # Gem::MissingSpecError among them
          ["-I", LIB]
        end

        # @return [String, nil] why this command cannot re-execute lean, nil if it can
        def ineligible(argv, env = ENV)
          return "already lean" if @state || env.key?(BOOT_ENV)
          return "#{SWITCH_ENV}=#{env[SWITCH_ENV]}" if EnvSwitch.off?(env[SWITCH_ENV])
          return FLAG if argv.include?(FLAG)
          return "plain preload" if argv.include?("--no-subreaper") || EnvSwitch.on?(env["HERD_NO_SUBREAPER"])
          return "not Linux" unless RUBY_PLATFORM.include?("linux")
          return "RubyGems not loaded" unless defined?(::Gem)
          return "RUBYOPT requires more than bundler/setup" if other_requires?(env["RUBYOPT"])

          "#{EXE} is missing" unless File.file?(EXE)
        end

        private

        # A gem of the bundle (not Ruby's default copy) that ships a file
        # this process already loaded from Ruby's own directories.
        def shadowed_gems(loaded)
          own = [RbConfig::CONFIG["rubylibdir"], RbConfig::CONFIG["rubyarchdir"]].map { |dir| "#{dir}/" }
          relative = loaded.filter_map do |path|
            (prefix = own.find { |dir| path.start_with?(dir) }) && path.delete_prefix(prefix)
          end
          Gem.loaded_specs.values.reject(&:default_gem?).select do |spec|
            spec.full_require_paths.any? { |dir| relative.any? { |file| File.file?(File.join(dir, file)) } }
          end.map { |spec| "#{spec.name} #{spec.version}" }.sort
        rescue
          []
        end

        def lean_env(env)
          ruby_gc = RubyGCDefaults.missing(env)
          {
            BOOT_ENV => [Marshal.dump(boot_description(env, ruby_gc))].pack("m0"),
            "RUBYOPT" => lean_rubyopt(env["RUBYOPT"])
          }.merge(ruby_gc)
        end

        def boot_description(env, ruby_gc)
          bundler = defined?(::Bundler) && $LOADED_FEATURES.any? { |path| path.end_with?("/bundler/setup.rb") }
          {rubygems: true, bundler: bundler ? true : false, gemfile: env["BUNDLE_GEMFILE"],
           rubyopt: env["RUBYOPT"], load_path: $LOAD_PATH.map(&:to_s), ruby_gc: ruby_gc}
        end

        # RUBYOPT's words, `-r X` joined into one.
        def rubyopt_words(rubyopt)
          words = rubyopt.to_s.split
          words.each_with_index.filter_map do |word, index|
            next if words[index - 1] == "-r" && index.positive?

            (word == "-r") ? "-r#{words[index + 1]}" : word
          end
        end

        def other_requires?(rubyopt)
          rubyopt_words(rubyopt).any? { |word| word.start_with?("-r") && !word.match?(BUNDLER_SETUP) }
        end

        def lean_rubyopt(rubyopt)
          words = rubyopt_words(rubyopt).grep_v(BUNDLER_SETUP)
          words.empty? ? nil : words.join(" ")
        end
      end
    end
  end
end
