# frozen_string_literal: true

# ActiveRecord + SQLite in Herd.map: which advice leaves no "Writable sqlite
# database connection(s) were inherited from a forked process" warning.
#
#   BUNDLE_GEMFILE=test/apps/Gemfile bundle exec ruby -Ilib bench/pool/sqlite_fork.rb [WORKERS]
#
# sqlite3 2.x prepends its own Process._fork and, in the child, closes every
# writable database the parent left open, warning once per child: before
# anything of herd's (after_fork: included) runs there. Each variant runs in a
# fresh Ruby: open a writable database in the parent (a table, a row), lease
# the connection to the calling thread as a Rails request or a job would,
# then Herd.map over WORKERS workers that query through ActiveRecord; its
# warnings on stderr are counted, and the parent's next query checked.

require "open3"
require "rbconfig"
require "tmpdir"

# What a built-in could do: close what no thread uses, and the calling
# thread's own connection when no transaction is open (ActiveRecord 7.1+
# reconnects it at its next query); another thread's is left alone.
RELEASE = <<~CODE
  ActiveRecord::Base.connection_handler.connection_pool_list(:all).each do |pool|
    pool.flush(-1)
    conn = pool.active_connection
    conn.disconnect! if conn && !conn.transaction_open?
  end
CODE

VARIANTS = {
  "after_fork: reconnect (nothing before)" => {},
  "before_fork: clear_all_connections!(:all)" => {before_fork: "ActiveRecord::Base.connection_handler.clear_all_connections!(:all)"},
  "parent: connection_pool.disconnect! before the call" => {parent: "ActiveRecord::Base.connection_pool.disconnect!"},
  "inside a transaction, before_fork: clear_all_connections!(:all)" =>
    {transaction: true, before_fork: "ActiveRecord::Base.connection_handler.clear_all_connections!(:all)"},
  "inside a transaction, nothing before" => {transaction: true},
  "parent: idle connections flushed, its own disconnected unless in a transaction" => {parent: RELEASE},
  "inside a transaction, the same" => {transaction: true, parent: RELEASE},
  "SQLite3::ForkSafety.suppress_warnings! (hides it only)" => {parent: "SQLite3::ForkSafety.suppress_warnings!"}
}.freeze

CHILD = <<~'RUBY'
  require "active_record"
  require "herd"
  workers, path, before_fork, parent, transaction = ARGV
  ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: path)
  ActiveRecord::Base.connection.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, n INTEGER)")
  ActiveRecord::Base.connection.execute("INSERT INTO items (n) VALUES (1)") # writable, leased by this thread
  class Item < ActiveRecord::Base; end
  call = lambda do
    eval(parent) unless parent.empty? # rubocop:disable Security/Eval -- the variant's code
    Herd.map(1..(Integer(workers) * 4), processes: Integer(workers),
      before_fork: before_fork.empty? ? nil : -> { eval(before_fork) }, # rubocop:disable Security/Eval
      after_fork: ->(_n) { ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: path) }) do |i|
      Item.count + i
    end
  end
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  results = if transaction == "1"
    ActiveRecord::Base.transaction do
      Item.create!(n: 3) # written inside the transaction, committed after the call
      call.call
    end
  else
    Item.create!(n: 3)
    call.call
  end
  seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  raise "wrong results" unless results.size == Integer(workers) * 4
  Item.create!(n: 2) # the parent goes on writing
  rows = Item.count
  raise "#{rows} rows, not 3: a write was lost" unless rows == 3
  puts format("ok %.3f", seconds)
RUBY

workers = Integer(ARGV.fetch(0, "2"))
puts "sqlite3 #{Gem.loaded_specs["sqlite3"]&.version}, activerecord #{Gem.loaded_specs["activerecord"]&.version}, #{workers} workers"
puts "| variant | warnings on stderr | parent queries after | map s |"
puts "| --- | --- | --- | --- |"
VARIANTS.each do |name, variant|
  Dir.mktmpdir do |dir|
    out, err, status = Open3.capture3(RbConfig.ruby, "-e", CHILD, workers.to_s, File.join(dir, "db.sqlite3"),
      variant[:before_fork].to_s, variant[:parent].to_s, variant[:transaction] ? "1" : "0")
    warnings = err.scan("Writable sqlite database connection(s) were inherited").size
    ok, seconds = out.split
    other = err.lines.grep_v(/Writable sqlite|^\s*$/).first
    puts "| #{name} | #{warnings} | #{(ok == "ok" && status.success?) ? "yes" : "NO: #{other&.strip}"} | #{seconds || "-"} |"
  end
end
