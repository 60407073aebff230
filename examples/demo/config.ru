# frozen_string_literal: true

# herd's demo app: the shape of a real app's memory problem, small enough to
# watch. Boot defines many constants and methods (as an app's code does);
# every request calls them all, which fills each call site's inline and
# constant caches — writes to memory the mold shared with the workers. After
# a refork, workers are forked from a process whose caches are already warm.
COUNT = Integer(ENV.fetch("HERD_DEMO_CONSTANTS", 20_000))

module Demo
  COUNT.times do |i|
    const_set(:"VALUE_#{i}", "value #{i}")
    module_eval "def self.lookup_#{i} = VALUE_#{i}", __FILE__, __LINE__
  end

  def self.warm
    COUNT.times { |i| public_send(:"lookup_#{i}") }
    COUNT
  end
end

run ->(env) { [200, {"content-type" => "text/plain"}, ["looked up #{Demo.warm} constants in #{Process.pid}\n"]] }
