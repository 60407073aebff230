# frozen_string_literal: true

# `rake yard:undoc`: every public method, class and constant under Herd:: is
# documented. Public is what docs/API.md lists; internals are marked
# `@api private` (on their class or module, which covers what is inside) and
# are not counted. Part of `rake` (check): it takes a few seconds.
namespace :yard do
  desc "Fail when `yard stats --list-undoc` lists anything public under Herd:: (internals: @api private)"
  task :undoc do
    require "open3"
    out, err, status = Open3.capture3("bundle", "exec", "yard", "stats", "--list-undoc", "--no-save", "--hide-api", "private", "lib")
    abort "yard stats failed:\n#{err}" unless status.success?

    listed = out.split("Undocumented Objects:", 2)[1].to_s.lines.map(&:strip)
    undocumented = listed.grep(/\AHerd(::|\.|#|\z)/)
    if undocumented.empty?
      puts "yard: every public object under Herd:: is documented"
    else
      abort "yard: #{undocumented.size} public object(s) under Herd:: without documentation " \
        "(document them, or tag internals @api private):\n  #{undocumented.join("\n  ")}"
    end
  end
end
