"""lockharness explore: random fault mixes inside a fault model, exposure feedback, replay
and shrinking.

Three rooms, bottom to top, each importing only from those below it (tests/test_layers.py
finds no cycle between folders): generate/ (the fault model, its trial dimensions, drawing,
mutating and aiming trials), shrink/ (reproducing a violation and shrinking it), campaign/
(the exploration itself: trials run and fed back, violations kept, confirmed and written,
the record and the report). models/ holds the named fault models.
"""
