#!/usr/bin/python3
# A tiny GTK3 window for the accessibility tests: a button that prints
# "clicked" when pressed, a text entry, a check box and a label. It prints
# "ready" once shown and "text=<entry text>" whenever the entry changes.
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402


def say(line):
    print(line, flush=True)


win = Gtk.Window(title="bureau ui test")
win.set_default_size(320, 200)
win.move(40, 30)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
win.add(box)

button = Gtk.Button(label="Press me")
button.connect("clicked", lambda _b: say("clicked"))
box.pack_start(button, False, False, 0)

entry = Gtk.Entry()
entry.get_accessible().set_name("Your name")
entry.connect("changed", lambda e: say("text=" + e.get_text()))
box.pack_start(entry, False, False, 0)

check = Gtk.CheckButton(label="Remember me")
box.pack_start(check, False, False, 0)

label = Gtk.Label(label="Hello label")
box.pack_start(label, False, False, 0)

hidden = Gtk.Button(label="Hidden button")
box.pack_start(hidden, False, False, 0)

win.connect("destroy", Gtk.main_quit)
win.show_all()
hidden.hide()
GLib.timeout_add(300, lambda: say("ready") and False)
Gtk.main()
sys.exit(0)
