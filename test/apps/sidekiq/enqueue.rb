# frozen_string_literal: true

# ruby enqueue.rb COUNT SECONDS [QUEUE]: pushes COUNT CountedJobs, prints
# "jid JID" for each (Sidekiq logs on stdout too).
require_relative "jobs"

count, seconds, queue = ARGV
job = CountedJob.set(queue: queue || "default")
Integer(count).times { puts "jid #{job.perform_async(Float(seconds))}" }
