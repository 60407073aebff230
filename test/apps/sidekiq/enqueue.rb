# frozen_string_literal: true

# ruby enqueue.rb COUNT SECONDS: pushes COUNT CountedJobs, prints "jid JID" for each
# (Sidekiq logs on stdout too).
require_relative "jobs"

count, seconds = ARGV.map(&:to_f)
Integer(count).times { puts "jid #{CountedJob.perform_async(seconds)}" }
