# frozen_string_literal: true

require "tmpdir"
require "yaml"

# A second app whose sharing erodes in other ways than constant caches: what
# a preforked worker builds on its first requests is private to that worker,
# unless it is forked from a worker that already built it.
#
# - Catalog: class-level data memoized on first use (`@rows ||= ...`),
#   TABLES classes of ROWS records each.
# - Settings: a YAML file written at boot, parsed on first use.
# - Shapes: SHAPES classes whose methods are called from the same call sites
#   (one call site seeing every receiver class), which fills method caches
#   per class lazily.
module Lazy
  TABLES = Integer(ENV.fetch("LAZY_TABLES", 200))
  ROWS = Integer(ENV.fetch("LAZY_ROWS", 1_000))
  SHAPES = Integer(ENV.fetch("LAZY_SHAPES", 5_000))
  SETTINGS = Integer(ENV.fetch("LAZY_SETTINGS", 20_000))

  # Class-level memoized data, one class per table.
  module Catalog
    TABLES.times do |t|
      const_set(:"Table#{t}", Class.new {
        define_singleton_method(:rows) do
          @rows ||= Array.new(ROWS) { |i| {id: i, name: "item #{t}-#{i}", tags: ["t#{i % 7}", "u#{i % 11}"], price: i * 1.5} }
        end
      })
    end

    def self.tables
      @tables ||= constants.sort.map { |name| const_get(name) }
    end

    def self.total
      tables.sum { |table| table.rows.size }
    end
  end

  # A YAML config loaded (and kept) on first use.
  module Settings
    PATH = File.join(Dir.tmpdir, "herd-bench-cow-settings-#{SETTINGS}.yml")
    File.write("#{PATH}.#{Process.pid}", YAML.dump(Array.new(SETTINGS) { |i|
      ["feature_#{i}", {"enabled" => i.even?, "rollout" => i % 100, "owners" => ["team#{i % 13}"], "note" => "flag number #{i}"}]
    }.to_h))
    File.rename("#{PATH}.#{Process.pid}", PATH) # whole, even if two servers boot at once

    def self.all
      @all ||= YAML.load_file(PATH)
    end

    def self.enabled
      all.count { |_name, setting| setting["enabled"] }
    end
  end

  # Many classes, one call site: `shape.area` sees SHAPES receiver classes.
  module Shapes
    CLASSES = Array.new(SHAPES) do |i|
      Class.new do
        define_method(:area) { i * 2 }
        define_method(:label) { "shape #{i}" }
        class_eval("def perimeter = #{i} + 4; def sides = #{i % 9}", __FILE__, __LINE__)
      end
    end
    INSTANCES = CLASSES.map(&:new)

    def self.measure
      INSTANCES.sum { |shape| shape.area + shape.perimeter + shape.sides + shape.label.size }
    end
  end
end

run ->(_env) {
  body = "rows=#{Lazy::Catalog.total} enabled=#{Lazy::Settings.enabled} shapes=#{Lazy::Shapes.measure}\n"
  [200, {"content-type" => "text/plain"}, [body]]
}
