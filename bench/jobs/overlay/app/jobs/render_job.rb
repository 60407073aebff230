# frozen_string_literal: true

# Renders the scaffold's things/index with its layout to a string, as a
# mailer or a cached fragment would: the first 20 things.
class RenderJob < BenchJob
  def perform(_index)
    things = Thing.order(:id).limit(20).to_a
    html = ApplicationController.render(template: "things/index", assigns: {things: things})
    raise "things/index rendered without its things" unless html.include?(things.last.name)
  end
end
