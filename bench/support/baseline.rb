# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "shellwords"
require "tmpdir"
require_relative "report"

module Bench
  # herd as it was at an earlier git revision, run beside the checkout's in
  # the same run (`--baseline REF` of bench/http, bench/http_paired and
  # bench/cow, as server herd@REF): on a shared machine a change is only
  # measured against what it changes side by side.
  #
  # Its lib/ and exe/ go to a temporary directory, with that revision's C
  # extension built into its lib/herd/ when it has one (as `rake compile`
  # builds it in a checkout): without it, a baseline would parse every
  # request in Ruby and not be the herd users ran.
  class Baseline
    attr_reader :ref, :dir

    # Extracts herd at `ref`; aborts when it cannot.
    # @param bench [String] the benchmark, for the message
    def self.extract(ref, bench:)
      new(ref, Dir.mktmpdir("herd-#{ref.tr("/", "-")}"), bench).tap(&:extract)
    end

    def initialize(ref, dir, bench)
      @ref = ref
      @dir = dir
      @bench = bench
    end

    # @return [String] the server's name in the results
    def name = "herd@#{@ref}"

    # @return [Array<String>] the command that stands for `bundle exec herd`: the same bundle, this herd's lib/ first
    def command = %W[bundle exec ruby -I #{@dir}/lib #{@dir}/exe/herd]

    def remove = FileUtils.rm_rf(@dir)

    def extract
      ok = system("git archive #{@ref.shellescape} lib exe | tar -x -C #{@dir.shellescape}", chdir: Report::ROOT)
      fail!("cannot extract herd at #{@ref} (git archive failed)") unless ok
      build_extension
    end

    private

    def build_extension
      # ext/herd/head_scanner before issue 37 named it for what it is.
      name = %w[native head_scanner].find do |candidate|
        system("git cat-file -e #{@ref.shellescape}:ext/herd/#{candidate}/extconf.rb", chdir: Report::ROOT, err: File::NULL)
      end
      return unless name

      source = "ext/herd/#{name}"
      build = File.join(@dir, "build")
      FileUtils.mkdir_p(build)
      ok = system("git archive #{@ref.shellescape} ext | tar -x -C #{@dir.shellescape}", chdir: Report::ROOT) &&
        system(RbConfig.ruby, File.join(@dir, source, "extconf.rb"), chdir: build, out: File::NULL) &&
        system("make", "-s", chdir: build, out: File::NULL)
      built = Dir[File.join(build, "#{name}.*")].find { |path| path.end_with?(".#{RbConfig::CONFIG["DLEXT"]}") }
      fail!("cannot build herd's C extension at #{@ref}") unless ok && built
      FileUtils.cp(built, File.join(@dir, "lib", "herd"))
    end

    def fail!(message)
      remove
      abort "#{@bench}: #{message}"
    end
  end
end
