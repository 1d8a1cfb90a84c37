package atspi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"
)

// fakeBus is an accessibility bus in memory: the registry and the
// objects of each application, answering as AT-SPI2 does.
type fakeBus struct {
	mu   sync.Mutex
	objs map[obj]*fakeObj
	apps []obj
	// slow applications never answer (until ctx ends); leaving ones,
	// slow as they shut down, are gone from the bus once a call to them
	// has timed out.
	slow, leaving map[string]bool
	// did records actions done: "<name> <path> <action>".
	did []string
}

type fakeObj struct {
	role, name, desc string
	states           []string
	ifaces           []string
	bounds           []int32 // x, y, w, h
	actions          []string
	value            []float64 // current, min, max
	text             string
	kids             []obj
	parent           obj
	// onAction changes the object when an action is done.
	onAction func(f *fakeBus, o *fakeObj, action string)
	refuse   bool
}

func newFakeBus(screenW, screenH int32) *fakeBus {
	f := &fakeBus{objs: map[obj]*fakeObj{}, slow: map[string]bool{}, leaving: map[string]bool{}}
	f.objs[obj{registryName, rootPath}] = &fakeObj{role: "desktop frame", ifaces: []string{ifAccessible, ifComponent},
		bounds: []int32{0, 0, screenW, screenH}}
	return f
}

// app adds an application and returns its root.
func (f *fakeBus) app(bus, name string) obj {
	o := obj{bus, rootPath}
	f.objs[o] = &fakeObj{role: "application", name: name, ifaces: []string{ifAccessible, "org.a11y.atspi.Application"},
		parent: obj{":1.1", rootPath}}
	f.apps = append(f.apps, o)
	reg := f.objs[obj{registryName, rootPath}]
	reg.kids = append(reg.kids, o)
	return o
}

// add adds a child under parent; its path is parent's bus and a number.
func (f *fakeBus) add(parent obj, x *fakeObj) obj {
	o := obj{parent.bus, fmt.Sprintf("/org/a11y/atspi/accessible/%d", len(f.objs))}
	x.parent = parent
	if !slices.Contains(x.ifaces, ifAccessible) {
		x.ifaces = append([]string{ifAccessible}, x.ifaces...)
	}
	f.objs[o] = x
	p := f.objs[parent]
	p.kids = append(p.kids, o)
	return o
}

func (f *fakeBus) remove(o obj) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objs, o)
}

func (f *fakeBus) get(ctx context.Context, o obj) (*fakeObj, error) {
	f.mu.Lock()
	slow := f.slow[o.bus]
	x := f.objs[o]
	known := slices.ContainsFunc(f.apps, func(a obj) bool { return a.bus == o.bus }) || o.bus == registryName
	f.mu.Unlock()
	if slow {
		<-ctx.Done()
		f.mu.Lock()
		leaving := f.leaving[o.bus]
		f.mu.Unlock()
		if leaving {
			f.quit(o.bus)
		}
		return nil, errSlow
	}
	if !known {
		return nil, errNoApp
	}
	if x == nil {
		return nil, errNoObject
	}
	return x, nil
}

func (f *fakeBus) call(ctx context.Context, o obj, method string, args []any, out ...any) error {
	x, err := f.get(ctx, o)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	iface := method[:strings.LastIndex(method, ".")]
	if iface != ifAccessible && iface != "org.freedesktop.DBus.Properties" && !slices.Contains(x.ifaces, iface) {
		return fmt.Errorf("%s: %w", method, errNoInterface)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var reply []any
	switch method {
	case ifAccessible + ".GetState":
		reply = []any{encodeStates(x.states)}
	case ifAccessible + ".GetRoleName":
		reply = []any{x.role}
	case ifAccessible + ".GetInterfaces":
		reply = []any{x.ifaces}
	case ifAccessible + ".GetChildren":
		var kids [][]any
		for _, k := range x.kids {
			kids = append(kids, []any{k.bus, dbus.ObjectPath(k.path)})
		}
		reply = []any{kids}
	case ifComponent + ".GetExtents":
		b := x.bounds
		if b == nil {
			b = []int32{0, 0, 0, 0}
		}
		reply = []any{[]any{b[0], b[1], b[2], b[3]}}
	case ifComponent + ".GrabFocus":
		ok := !x.refuse && slices.Contains(x.states, "focusable")
		if ok {
			for _, y := range f.objs {
				y.states = slices.DeleteFunc(y.states, func(s string) bool { return s == "focused" })
			}
			x.states = append(x.states, "focused")
		}
		reply = []any{ok}
	case ifAction + ".GetName":
		reply = []any{x.actions[args[0].(int32)]}
	case ifAction + ".DoAction":
		i := int(args[0].(int32))
		f.did = append(f.did, x.name+" "+o.path+" "+x.actions[i])
		if x.onAction != nil {
			x.onAction(f, x, x.actions[i])
		}
		reply = []any{!x.refuse}
	case ifText + ".GetText":
		start, end := args[0].(int32), args[1].(int32)
		r := []rune(x.text)
		reply = []any{string(r[start:min(int(end), len(r))])}
	case ifEditable + ".SetTextContents":
		x.text = args[0].(string)
		reply = []any{!x.refuse}
	case "org.freedesktop.DBus.Properties.GetAll":
		reply = []any{f.propsOf(x, args[0].(string))}
	case "org.freedesktop.DBus.Properties.Set":
		x.value[0] = args[2].(dbus.Variant).Value().(float64)
	default:
		return fmt.Errorf("%s: %w", method, errNoInterface)
	}
	return dbus.Store(reply, out...)
}

func (f *fakeBus) propsOf(x *fakeObj, iface string) map[string]dbus.Variant {
	m := map[string]dbus.Variant{}
	switch iface {
	case ifAccessible:
		m["Name"] = dbus.MakeVariant(x.name)
		m["Description"] = dbus.MakeVariant(x.desc)
		m["ChildCount"] = dbus.MakeVariant(int32(len(x.kids)))
		m["Parent"] = dbus.MakeVariant([]any{x.parent.bus, dbus.ObjectPath(x.parent.path)})
	case ifValue:
		m["CurrentValue"] = dbus.MakeVariant(x.value[0])
		m["MinimumValue"] = dbus.MakeVariant(x.value[1])
		m["MaximumValue"] = dbus.MakeVariant(x.value[2])
	case ifText:
		m["CharacterCount"] = dbus.MakeVariant(int32(len([]rune(x.text))))
	case ifAction:
		m["NActions"] = dbus.MakeVariant(int32(len(x.actions)))
	}
	return m
}

func (f *fakeBus) props(ctx context.Context, o obj, iface string) (map[string]any, error) {
	var m map[string]dbus.Variant
	if err := f.call(ctx, o, "org.freedesktop.DBus.Properties.GetAll", []any{iface}, &m); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v.Value()
	}
	return out, nil
}

func (f *fakeBus) setProp(ctx context.Context, o obj, iface, name string, v any) error {
	return f.call(ctx, o, "org.freedesktop.DBus.Properties.Set", []any{iface, name, dbus.MakeVariant(v)})
}

func (f *fakeBus) hasOwner(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.apps, func(a obj) bool { return a.bus == name }), nil
}

func (f *fakeBus) quit(bus string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apps = slices.DeleteFunc(f.apps, func(a obj) bool { return a.bus == bus })
}

// encodeStates is decodeStates backwards.
func encodeStates(names []string) []uint32 {
	words := []uint32{0, 0}
	for _, n := range names {
		i := stateIndex(n)
		if i < 0 {
			panic("unknown state " + n)
		}
		words[i/32] |= 1 << (i % 32)
	}
	return words
}

// shown are the states of a widget on the screen.
var shown = []string{"enabled", "sensitive", "visible", "showing"}

func states(extra ...string) []string { return append(slices.Clone(shown), extra...) }

// sample is a desktop with two applications: "uiapp" with a window
// holding a button, an entry, a check box, a label, a slider and a
// hidden button; "daemon" with a window that is not showing.
type sample struct {
	f                                                *fakeBus
	app, win, box, button, entry, check, label, hide obj
	slider, daemon, daemonWin                        obj
}

func newSample() *sample {
	f := newFakeBus(1280, 800)
	s := &sample{f: f}
	s.app = f.app(":1.5", "uiapp")
	s.win = f.add(s.app, &fakeObj{role: "frame", name: "bureau ui test", states: states("active", "resizable"),
		ifaces: []string{ifComponent}, bounds: []int32{40, 30, 320, 200}})
	s.box = f.add(s.win, &fakeObj{role: "filler", states: states(), ifaces: []string{ifComponent}, bounds: []int32{40, 30, 320, 200}})
	s.button = f.add(s.box, &fakeObj{role: "push button", name: "Press me", states: states("focusable"),
		ifaces: []string{ifComponent, ifAction}, bounds: []int32{40, 30, 320, 30}, actions: []string{"click"}})
	s.entry = f.add(s.box, &fakeObj{role: "text", name: "Your name", states: states("focusable", "editable", "single_line"),
		ifaces: []string{ifComponent, ifAction, ifText, ifEditable}, bounds: []int32{40, 66, 320, 30}, actions: []string{"activate"},
		text: "hello"})
	s.check = f.add(s.box, &fakeObj{role: "check box", name: "Remember me", states: states("focusable", "checkable"),
		ifaces: []string{ifComponent, ifAction}, bounds: []int32{40, 102, 320, 20}, actions: []string{"click"},
		onAction: func(_ *fakeBus, o *fakeObj, _ string) { o.states = append(o.states, "checked") }})
	s.label = f.add(s.box, &fakeObj{role: "label", name: "Hello label", states: states(), ifaces: []string{ifComponent, ifText},
		bounds: []int32{40, 128, 320, 20}, text: "Hello label"})
	s.slider = f.add(s.box, &fakeObj{role: "slider", name: "Volume", states: states("focusable"), ifaces: []string{ifComponent, ifValue},
		bounds: []int32{40, 150, 320, 20}, value: []float64{3, 0, 10}})
	s.hide = f.add(s.box, &fakeObj{role: "push button", name: "Hidden button", states: []string{"enabled", "sensitive"},
		ifaces: []string{ifComponent, ifAction}, actions: []string{"click"}})
	s.daemon = f.app(":1.7", "daemon")
	s.daemonWin = f.add(s.daemon, &fakeObj{role: "window", name: "status", states: []string{"enabled"}, ifaces: []string{ifComponent}})
	return s
}

func (s *sample) desktop() *Desktop { return newDesktop(s.f) }
