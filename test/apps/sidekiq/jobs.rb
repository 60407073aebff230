# frozen_string_literal: true

# The jobs of test/apps/sidekiq_test.rb: each one records in Redis that it
# started and that it finished, by jid, and which process ran it, so the
# test can count jobs lost and jobs run twice.
require "sidekiq"

class CountedJob
  include Sidekiq::Job

  def perform(seconds)
    Sidekiq.redis do |redis|
      redis.call("HINCRBY", "started", jid, 1)
    end
    sleep seconds
    Sidekiq.redis do |redis|
      redis.call("HINCRBY", "finished", jid, 1)
      redis.call("SADD", "pids", Process.pid.to_s)
    end
  end
end
