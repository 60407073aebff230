# frozen_string_literal: true

# Queries and writes the app's database (the scaffold's Thing): a page of
# things, a count, one thing created and one updated.
class DatabaseJob < BenchJob
  def perform(index)
    things = Thing.order(:id).offset(index % 10).limit(10).to_a
    count = Thing.where("name LIKE ?", "thing%").count
    Thing.create!(name: "job #{index}", notes: things.map(&:name).join(", "))
    Thing.where(id: things.first.id).update_all(notes: "touched by job #{index} (#{count} seeded)", updated_at: Time.current)
  end
end
