"""lockharness explore: random fault mixes inside a fault model, exposure feedback, replay and shrinking."""
