# frozen_string_literal: true

# Copied by bench/reload.rb into the Rails app as
# config/initializers/bench_release.rb: reads RELEASE (the app's root) once,
# at boot, and answers it in an `x-release` header on every response. The
# benchmark writes another RELEASE before it asks for a reload, so a
# response tells which boot of the app served it.
release = File.read(File.expand_path("../../RELEASE", __dir__)).strip

Rails.application.config.middleware.insert_before 0, Class.new {
  define_method(:initialize) { |app| @app = app }
  define_method(:call) do |env|
    status, headers, body = @app.call(env)
    headers["x-release"] = release
    [status, headers, body]
  end
}
