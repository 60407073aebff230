# frozen_string_literal: true

module Herd
  module Cluster
    # YJIT turned on before the app loads (RUBY_YJIT_ENABLE, `--yjit`,
    # RUBYOPT) compiles the boot in the mold, and each worker's first major
    # GC copies YJIT's records of that code (docs/COPY_ON_WRITE.md, "A
    # worker's first major GC copies YJIT's block records"). Where Ruby can
    # turn YJIT on later instead (RubyVM::YJIT.enable, Ruby >= 3.3), a fresh
    # mold says so once its app is loaded.
    # @api private
    module EarlyYJIT
      ADVICE = "warning: YJIT was on before the app loaded (RUBY_YJIT_ENABLE, --yjit or RUBYOPT): " \
        "this mold compiled the app's boot, and each worker's first major GC copies YJIT's records of that code. " \
        "Turn YJIT on once the app is loaded instead: Rails 7.2 and later do it by themselves (config.yjit), " \
        "so unset RUBY_YJIT_ENABLE; other apps can call RubyVM::YJIT.enable at the end of config.ru " \
        "(docs/RAILS.md, \"YJIT\")"

      module_function

      # @return [Boolean] YJIT is on, and this Ruby could have turned it on later
      def on?
        !!(defined?(RubyVM::YJIT) && RubyVM::YJIT.respond_to?(:enable) && RubyVM::YJIT.enabled?)
      end
    end
  end
end
