# frozen_string_literal: true

# Pitchfork's memory benchmark app (examples/constant_caches.ru), without the
# memory report in the response: the driver measures from outside. Booting
# defines NUM (100,000) constants and as many methods returning them; every
# request calls them all, which fills each method's inline constant cache —
# a write into memory that is shared until then.
module App
  NUM = Integer(ENV.fetch("NUM", 100_000))

  NUM.times do |i|
    class_eval(<<~RUBY, __FILE__, __LINE__ + 1)
      Const#{i} = Module.new

      def self.lookup_#{i}
        Const#{i}
      end
    RUBY
  end

  class_eval(<<~RUBY, __FILE__, __LINE__ + 1)
    def self.warmup
      #{NUM.times.map { |i| "lookup_#{i}" }.join("\n")}
    end
  RUBY
end

run ->(_env) {
  App.warmup
  [200, {"content-type" => "text/plain"}, ["warm\n"]]
}
