// Package capture is duetvet's analyzer: it reports a Go handler that
// captures the object it is connected to.
//
// A connect site is a call that hands a Go func to a signal, in any of the
// forms duet offers:
//
//   - (*widgets.Widget).Connect and ConnectAfter;
//   - PyGObject's connect, connect_after, connect_object and
//     connect_object_after called by name: (*pygi.Object).CallMethod,
//     (*widgets.Widget).CallMethod, (*pygi.Block).CallMethod(o, name, ...)
//     and widgets.CallMethod(obj, name, ...);
//   - callbacks.Connect and callbacks.ConnectAfter(obj, signal, fn, ...);
//   - gotk4's Connect* methods, and the Connect* methods of types
//     embedding *widgets.Widget (duetgen's typed wrappers);
//   - the handler map of widgets.LoadUI and LoadUIFS, when it is a
//     composite literal.
//
// The handler is a func literal or a method value, possibly wrapped in
// callbacks.New or callbacks.NewMethod. It is reported when it refers to
// the object it is connected to through a variable from outside (the
// receiver's variable itself, or a struct variable the receiver is a field
// of), or when it is a method value of that object: Python holds the
// handler, the handler's Go closure holds the object, and neither
// collector can see the loop. widgets.Weakly(obj, fn) holds obj weakly, so
// naming obj there is no capture; fn itself is checked like any handler.
//
// LoadUI connects its handlers to objects of the interface it builds, which
// the code reaches only from LoadUI's result: a handler in the map is
// reported when it captures a variable that gets an object from that
// result (u.Object("button"), a field of such an object, the UI itself).
//
// A site that makes such a loop on purpose (a program that exits anyway, a
// test that measures the leak) says so with a comment on the call's line
// or the line above it (for a LoadUI handler, also the handler's line or
// the line above that):
//
//	//duet:cycle-ok the window lives as long as the process
package capture

import (
	"go/ast"
	"go/constant"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// Analyzer reports handlers that capture the object they are connected to.
var Analyzer = &analysis.Analyzer{
	Name:     "duetcapture",
	Doc:      "report Go signal handlers that capture the object they are connected to (a cycle neither garbage collector can see)",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

const (
	pygiPath      = "github.com/duet-gtk/duet/pygi"
	widgetsPath   = "github.com/duet-gtk/duet/widgets"
	callbacksPath = "github.com/duet-gtk/duet/callbacks"
	gotk4Prefix   = "github.com/diamondburned/gotk4/"
)

var connectMethods = map[string]bool{"connect": true, "connect_after": true, "connect_object": true, "connect_object_after": true}

func run(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	ins.WithStack([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node, push bool, stack []ast.Node) bool {
		if !push {
			return true
		}
		call := n.(*ast.CallExpr)
		fn := callee(pass, call)
		if fn == nil {
			return true
		}
		if obj, handler, gotk4, ok := connectSite(pass, call, fn); ok {
			checkConnect(pass, call, obj, handler, gotk4)
		} else if handlers, ok := loadUISite(fn, call); ok {
			checkLoadUI(pass, call, handlers, stack)
		}
		return true
	})
	return nil, nil
}

// connectSite recognises a call that connects a handler to a signal: obj
// is the expression for the object connected to, gotk4 whether the
// handler is gotk4's (it gets no emitter argument).
func connectSite(pass *analysis.Pass, call *ast.CallExpr, fn *types.Func) (obj, handler ast.Expr, gotk4, ok bool) {
	args := call.Args
	recv := methodRecv(fn)
	if recv == nil {
		switch path, name := fn.Pkg().Path(), fn.Name(); {
		case path == widgetsPath && name == "CallMethod" && len(args) >= 4 && isConnectName(pass, args[1]):
			return args[0], args[3], false, true
		case path == callbacksPath && (name == "Connect" || name == "ConnectAfter") && len(args) >= 3:
			return args[0], args[2], false, true
		}
		return nil, nil, false, false
	}
	sel, isSel := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !isSel {
		return nil, nil, false, false
	}
	switch name := fn.Name(); {
	case isNamed(recv, widgetsPath, "Widget") && (name == "Connect" || name == "ConnectAfter") && len(args) >= 2:
		return sel.X, args[1], false, true
	case (isNamed(recv, pygiPath, "Object") || isNamed(recv, widgetsPath, "Widget")) && name == "CallMethod" &&
		len(args) >= 3 && isConnectName(pass, args[0]):
		return sel.X, args[2], false, true
	case isNamed(recv, pygiPath, "Block") && name == "CallMethod" && len(args) >= 4 && isConnectName(pass, args[1]):
		return args[0], args[3], false, true
	case (inGotk4(recv) || embedsWidget(recv)) && strings.HasPrefix(name, "Connect") && len(args) >= 1:
		// gotk4's Connect* methods, and duetgen's typed Connect<Signal>.
		return sel.X, args[len(args)-1], inGotk4(pass.TypesInfo.TypeOf(sel.X)), true
	}
	return nil, nil, false, false
}

// checkConnect reports handler when it captures the variable behind obj.
func checkConnect(pass *analysis.Pass, call *ast.CallExpr, obj, handler ast.Expr, gotk4 bool) {
	root := rootVar(pass, obj)
	if root == nil || acknowledged(pass, call) {
		return
	}
	name := types.ExprString(obj)
	checkHandler(pass, handler, func(v *types.Var) bool { return v == root }, func(at ast.Expr, method bool) {
		if method {
			pass.Reportf(at.Pos(), "handler is a method value of %s, bound to %s, the object it is connected to: "+
				"a cycle neither garbage collector can see. Use a func that receives the emitter argument instead",
				types.ExprString(at.(*ast.SelectorExpr).X), name)
			return
		}
		fix := "Use the emitter argument (func(self *pygi.Object, ...)), pass it as connect-time data, " +
			"or capture it weakly: widgets.Weakly(" + name + ", fn)"
		if gotk4 {
			param := root.Name()
			if sel, ok := ast.Unparen(obj).(*ast.SelectorExpr); ok {
				param = sel.Sel.Name
			}
			typ := types.TypeString(pass.TypesInfo.TypeOf(obj), func(p *types.Package) string { return p.Name() })
			fix = "gotk4 handlers get no emitter: capture it weakly (widgets.Weakly(" + name + ", func(" + param + " " + typ +
				") {...})), or disconnect the handler when done"
		}
		pass.Reportf(at.Pos(), "handler captures %s, through which it reaches %s, the object it is connected to: "+
			"a cycle neither garbage collector can see (Python holds the handler, the Go closure holds the object). %s",
			root.Name(), name, fix)
	})
}

// loadUISite recognises widgets.LoadUI and LoadUIFS with a handler map
// written out at the call.
func loadUISite(fn *types.Func, call *ast.CallExpr) (*ast.CompositeLit, bool) {
	if methodRecv(fn) != nil || fn.Pkg().Path() != widgetsPath {
		return nil, false
	}
	var m ast.Expr
	switch {
	case fn.Name() == "LoadUI" && len(call.Args) == 2:
		m = call.Args[1]
	case fn.Name() == "LoadUIFS" && len(call.Args) == 3:
		m = call.Args[2]
	default:
		return nil, false
	}
	lit, ok := ast.Unparen(m).(*ast.CompositeLit)
	return lit, ok
}

// checkLoadUI reports the handlers of a LoadUI call that capture an object
// of the interface it builds.
func checkLoadUI(pass *analysis.Pass, call *ast.CallExpr, handlers *ast.CompositeLit, stack []ast.Node) {
	if acknowledged(pass, call) {
		return
	}
	ui := resultVar(pass, call, stack)
	if ui == nil {
		return // the interface's objects are out of this function's reach
	}
	fromUI := derivedFrom(pass, ui, scopeOf(stack))
	for _, elt := range handlers.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok || acknowledged(pass, kv) {
			continue
		}
		checkHandler(pass, kv.Value, func(v *types.Var) bool { return fromUI[v] }, func(at ast.Expr, method bool) {
			what := "captures " + types.ExprString(at)
			if method {
				what = "is a method value of " + types.ExprString(at.(*ast.SelectorExpr).X)
			}
			pass.Reportf(at.Pos(), "LoadUI handler %s, which holds an object of the interface it is bound in (from %s): "+
				"if that object emits the signal or holds the object that does (its window, a container), "+
				"the handler keeps it alive through a cycle neither garbage collector can see. "+
				"Let GtkBuilder pass it (the emitter argument, or <signal object=\"...\">), or hold it weakly: widgets.Weakly",
				what, ui.Name())
		})
	}
}

// checkHandler calls report with the first identifier by which handler
// captures a variable captured says is the object (or leads to it), or with
// handler itself when it is a method value bound to such a variable.
func checkHandler(pass *analysis.Pass, handler ast.Expr, captured func(*types.Var) bool, report func(at ast.Expr, method bool)) {
	switch h := ast.Unparen(handler).(type) {
	case *ast.CallExpr:
		switch {
		case isCallbacksNew(pass, h) && len(h.Args) > 0:
			checkHandler(pass, h.Args[0], captured, report)
			return
		case isWeakly(pass, h) && len(h.Args) == 2:
			// h.Args[0] is held weakly: only fn can capture.
			checkHandler(pass, h.Args[1], captured, report)
			return
		}
		// A wrapper of a handler made in its arguments (first(callbacks.New(...))).
		for _, a := range h.Args {
			if inner, ok := ast.Unparen(a).(*ast.CallExpr); ok && (isCallbacksNew(pass, inner) || isWeakly(pass, inner)) {
				checkHandler(pass, inner, captured, report)
			}
		}
	case *ast.FuncLit:
		var found *ast.Ident
		ast.Inspect(h.Body, func(n ast.Node) bool {
			if found != nil {
				return false
			}
			if id, ok := n.(*ast.Ident); ok {
				if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && captured(v) && !declaredIn(v, h) {
					found = id
				}
			}
			return true
		})
		if found != nil {
			report(found, false)
		}
	case *ast.SelectorExpr: // a method value bound to the object
		if sel, ok := pass.TypesInfo.Selections[h]; ok && sel.Kind() == types.MethodVal {
			if v := rootVar(pass, h.X); v != nil && captured(v) {
				report(h, true)
			}
		}
	}
}

// resultVar is the variable a call's first result is assigned to, or nil.
func resultVar(pass *analysis.Pass, call *ast.CallExpr, stack []ast.Node) *types.Var {
	if len(stack) < 2 {
		return nil
	}
	var lhs ast.Expr
	switch p := stack[len(stack)-2].(type) {
	case *ast.AssignStmt:
		if len(p.Rhs) == 1 && p.Rhs[0] == call && len(p.Lhs) > 0 {
			lhs = p.Lhs[0]
		}
	case *ast.ValueSpec:
		if len(p.Values) == 1 && p.Values[0] == call && len(p.Names) > 0 {
			lhs = p.Names[0]
		}
	}
	if id, ok := lhs.(*ast.Ident); ok {
		v, _ := pass.TypesInfo.ObjectOf(id).(*types.Var)
		return v
	}
	return nil
}

// scopeOf is the outermost function around the innermost node of stack
// (the interface's objects may be stored in variables of an enclosing
// function, from inside a closure), or the file.
func scopeOf(stack []ast.Node) ast.Node {
	for _, n := range stack {
		if fd, ok := n.(*ast.FuncDecl); ok && fd.Body != nil {
			return fd.Body
		}
	}
	return stack[0]
}

// derivedFrom is the set of variables in scope that get an object from ui:
// assigned, declared or ranged over from an expression that uses ui or a
// variable already in the set, and of an object's type (so that an error
// returned beside an object does not count).
func derivedFrom(pass *analysis.Pass, ui *types.Var, scope ast.Node) map[*types.Var]bool {
	set := map[*types.Var]bool{ui: true}
	uses := func(es ...ast.Expr) bool {
		found := false
		for _, e := range es {
			ast.Inspect(e, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && set[v] {
						found = true
					}
				}
				return !found
			})
		}
		return found
	}
	add := func(lhs ast.Expr) bool {
		if lhs == nil || !isObjectType(pass.TypesInfo.TypeOf(lhs)) {
			return false
		}
		v := lhsRoot(pass, lhs)
		if v == nil || set[v] {
			return false
		}
		set[v] = true
		return true
	}
	for changed := true; changed; {
		changed = false
		ast.Inspect(scope, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				if uses(s.Rhs...) {
					for _, l := range s.Lhs {
						changed = add(l) || changed
					}
				}
			case *ast.ValueSpec:
				if uses(s.Values...) {
					for _, id := range s.Names {
						changed = add(id) || changed
					}
				}
			case *ast.RangeStmt:
				if uses(s.X) {
					changed = add(s.Key) || changed
					changed = add(s.Value) || changed
				}
			}
			return true
		})
	}
	return set
}

// lhsRoot is the variable an assignment's left-hand side w, s.w or s.a[i]
// stores into, declared there or before.
func lhsRoot(pass *analysis.Pass, e ast.Expr) *types.Var {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			v, ok := pass.TypesInfo.ObjectOf(x).(*types.Var)
			if !ok || v.Parent() == nil || v.Parent() == v.Pkg().Scope() {
				return nil
			}
			return v
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// isObjectType reports whether a value of type t holds a GObject (or, for
// *widgets.UI, all of an interface's).
func isObjectType(t types.Type) bool {
	if t == nil {
		return false
	}
	if embedsWidget(t) {
		return true
	}
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	return isNamed(p, pygiPath, "Object") || isNamed(p, widgetsPath, "Widget") || isNamed(p, widgetsPath, "UI") || inGotk4(p)
}

// acknowledged reports whether a //duet:cycle-ok comment sits on n's first
// line or the line above it.
func acknowledged(pass *analysis.Pass, n ast.Node) bool {
	pos := pass.Fset.Position(n.Pos())
	for _, f := range pass.Files {
		if pass.Fset.Position(f.Pos()).Filename != pos.Filename {
			continue
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if !strings.HasPrefix(c.Text, "//duet:cycle-ok") {
					continue
				}
				if l := pass.Fset.Position(c.Pos()).Line; l == pos.Line || l == pos.Line-1 {
					return true
				}
			}
		}
	}
	return false
}

// rootVar is the local variable an expression such as w, s.w or s.a.w
// starts from (nil for package-level variables and anything else).
func rootVar(pass *analysis.Pass, e ast.Expr) *types.Var {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			v, ok := pass.TypesInfo.Uses[x].(*types.Var)
			if !ok || v.Parent() == v.Pkg().Scope() {
				return nil
			}
			return v
		case *ast.SelectorExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		default:
			return nil
		}
	}
}

func declaredIn(v *types.Var, lit *ast.FuncLit) bool {
	return v.Pos() >= lit.Pos() && v.Pos() < lit.End()
}

// callee is the function or method a call calls by name, or nil.
func callee(pass *analysis.Pass, call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.Ident:
		id = f
	default:
		return nil
	}
	fn, ok := pass.TypesInfo.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return nil
	}
	return fn
}

func methodRecv(fn *types.Func) types.Type {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return nil
	}
	return sig.Recv().Type()
}

func isNamed(t types.Type, path, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == path && n.Obj().Name() == name
}

func inGotk4(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && strings.HasPrefix(n.Obj().Pkg().Path(), gotk4Prefix)
}

// embedsWidget reports whether t is a struct type embedding *widgets.Widget
// (a duetgen wrapper, or a hand-written one like it).
func embedsWidget(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for i := range st.NumFields() {
		if f := st.Field(i); f.Embedded() && isNamed(f.Type(), widgetsPath, "Widget") {
			return true
		}
	}
	return false
}

func isConnectName(pass *analysis.Pass, e ast.Expr) bool {
	tv, ok := pass.TypesInfo.Types[e]
	return ok && tv.Value != nil && tv.Value.Kind() == constant.String && connectMethods[constant.StringVal(tv.Value)]
}

func isCallbacksNew(pass *analysis.Pass, c *ast.CallExpr) bool {
	fn := callee(pass, c)
	return fn != nil && methodRecv(fn) == nil && fn.Pkg().Path() == callbacksPath && (fn.Name() == "New" || fn.Name() == "NewMethod")
}

// isWeakly reports a call of widgets.Weakly(obj, fn), whose handler holds
// obj weakly.
func isWeakly(pass *analysis.Pass, c *ast.CallExpr) bool {
	fn := callee(pass, c)
	return fn != nil && methodRecv(fn) == nil && fn.Pkg().Path() == widgetsPath && fn.Name() == "Weakly"
}
