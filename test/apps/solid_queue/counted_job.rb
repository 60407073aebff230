# frozen_string_literal: true

# Copied into the Rails 8 app by test/apps/rails8_solid_queue_test.rb: each
# job leaves a file when it starts and one when it finishes, named by its
# job id, holding the pid that ran it.
class CountedJob < ApplicationJob
  def perform(seconds)
    dir = Rails.root.join("tmp/jobs")
    File.write(dir.join("started.#{job_id}"), Process.pid.to_s)
    sleep seconds
    File.write(dir.join("finished.#{job_id}"), Process.pid.to_s)
  end
end
