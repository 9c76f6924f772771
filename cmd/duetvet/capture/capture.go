// Package capture is duetvet's analyzer: it reports a Go handler that
// captures the object it is connected to.
//
// A connect site is a call that hands a Go func to a signal:
// (*widgets.Widget).Connect, (*pygi.Object).CallMethod with "connect",
// "connect_after", "connect_object" or "connect_object_after", gotk4's
// Connect* methods, and the Connect* methods of types embedding
// *widgets.Widget (duetgen's typed wrappers). The handler is a func
// literal or a method value, possibly wrapped in callbacks.New,
// callbacks.NewMethod or widgets.Weakly (which holds its object weakly,
// not what its func captures). It is reported when it refers to the object
// it is connected to through a variable from outside (the receiver's variable itself, or a struct variable the
// receiver is a field of), or when it is a method value of that object:
// Python holds the handler, the handler's Go closure holds the object, and
// neither collector can see the loop.
//
// A site that makes such a loop on purpose (a program that exits anyway, a
// test that measures the leak) says so with a comment on the call's line
// or the line above it:
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
	ins.Preorder([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node) {
		call := n.(*ast.CallExpr)
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return
		}
		fn, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Func)
		if !ok {
			return
		}
		recvType := methodRecv(fn)
		if recvType == nil {
			return
		}
		var handler ast.Expr
		switch {
		case isNamed(recvType, widgetsPath, "Widget") && fn.Name() == "Connect" && len(call.Args) >= 2:
			handler = call.Args[1]
		case isNamed(recvType, pygiPath, "Object") && fn.Name() == "CallMethod" && len(call.Args) >= 3 && isConnectName(pass, call.Args[0]):
			handler = call.Args[2]
		case (inGotk4(recvType) || embedsWidget(recvType)) && strings.HasPrefix(fn.Name(), "Connect") && len(call.Args) >= 1:
			// gotk4's Connect* methods, and duetgen's typed Connect<Signal>.
			handler = call.Args[len(call.Args)-1]
		default:
			return
		}
		root := rootVar(pass, sel.X)
		if root == nil || acknowledged(pass, call) {
			return
		}
		check(pass, handler, sel.X, root)
	})
	return nil, nil
}

// check reports handler when it captures root, the variable behind recv.
func check(pass *analysis.Pass, handler, recv ast.Expr, root *types.Var) {
	handler = ast.Unparen(handler)
	if c, ok := handler.(*ast.CallExpr); ok { // callbacks.New(fn, ...) or widgets.Weakly(x, fn), possibly inside another call
		if fn := wrapped(pass, c); fn != nil {
			check(pass, fn, recv, root)
			return
		}
		for _, a := range c.Args {
			if inner, ok := ast.Unparen(a).(*ast.CallExpr); ok && wrapped(pass, inner) != nil {
				check(pass, inner, recv, root)
			}
		}
		return
	}
	name := types.ExprString(recv)
	switch h := handler.(type) {
	case *ast.FuncLit:
		var found ast.Node
		ast.Inspect(h.Body, func(n ast.Node) bool {
			if found != nil {
				return false
			}
			if id, ok := n.(*ast.Ident); ok && pass.TypesInfo.Uses[id] == root && !declaredIn(root, h) {
				found = id
			}
			return true
		})
		if found != nil {
			fix := "Use the emitter argument (func(self *pygi.Object, ...)), pass it as connect-time data, or capture it weakly (widgets.Weakly(" + name + ", fn))"
			if t := pass.TypesInfo.TypeOf(recv); inGotk4(t) {
				param := root.Name()
				if sel, ok := ast.Unparen(recv).(*ast.SelectorExpr); ok {
					param = sel.Sel.Name
				}
				typ := types.TypeString(t, func(p *types.Package) string { return p.Name() })
				fix = "gotk4 handlers get no emitter: capture it weakly (widgets.Weakly(" + name + ", func(" + param + " " + typ +
					") {...})), or disconnect the handler when done"
			}
			pass.Report(analysis.Diagnostic{
				Pos: found.Pos(),
				Message: "handler captures " + root.Name() + ", through which it reaches " + name +
					", the object it is connected to: a cycle neither garbage collector can see " +
					"(Python holds the handler, the Go closure holds the object). " + fix,
			})
		}
	case *ast.SelectorExpr: // a method value bound to the object
		if sel, ok := pass.TypesInfo.Selections[h]; ok && sel.Kind() == types.MethodVal && rootVar(pass, h.X) == root {
			pass.Report(analysis.Diagnostic{
				Pos: h.Pos(),
				Message: "handler is a method value of " + types.ExprString(h.X) + ", bound to " + name +
					", the object it is connected to: a cycle neither garbage collector can see. " +
					"Use a func that receives the emitter argument instead",
			})
		}
	}
}

// acknowledged reports whether a //duet:cycle-ok comment sits on the
// call's first line or the line above it.
func acknowledged(pass *analysis.Pass, call *ast.CallExpr) bool {
	pos := pass.Fset.Position(call.Pos())
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

// wrapped returns the handler a call wraps: fn of callbacks.New(fn, ...),
// callbacks.NewMethod(fn, ...) or widgets.Weakly(obj, fn) (whose obj is
// held weakly, but whose fn may still capture strongly); nil for other
// calls.
func wrapped(pass *analysis.Pass, c *ast.CallExpr) ast.Expr {
	var id *ast.Ident
	switch f := ast.Unparen(c.Fun).(type) {
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
	switch {
	case fn.Pkg().Path() == callbacksPath && (fn.Name() == "New" || fn.Name() == "NewMethod") && len(c.Args) > 0:
		return c.Args[0]
	case fn.Pkg().Path() == widgetsPath && fn.Name() == "Weakly" && len(c.Args) == 2:
		return c.Args[1]
	}
	return nil
}
