// A reference to a callable that owns nothing: two words, no allocation, no copy of the callable, and a call
// through one function pointer. For callbacks made and called within one scope (a wait's failure check), where a
// std::function's construction and destruction cost more than the call they serve. It binds only to lvalues, so
// that it cannot outlive a temporary lambda; a member function binds through FunctionRef::to<&C::f>(object).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace braid {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  FunctionRef() = default;

  template <typename F>
  requires(!std::is_same_v<std::remove_cv_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F& callable)
  noexcept  // NOLINT(google-explicit-constructor): a callback parameter takes lambdas
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
        call_([](void* object, Args... args) -> R { return (*static_cast<F*>(object))(std::forward<Args>(args)...); }) {
  }

  /// A temporary would be gone before the call: name the callable first.
  template <typename F>
  requires(!std::is_lvalue_reference_v<F> && !std::is_same_v<std::remove_cvref_t<F>, FunctionRef>) FunctionRef(F&&)
  = delete;

  /// `(object->*Method)(args...)`.
  template <auto Method, typename C>
  static FunctionRef to(C* object) noexcept {
    FunctionRef f;
    f.object_ = const_cast<void*>(static_cast<const void*>(object));
    f.call_ = [](void* o, Args... args) -> R { return (static_cast<C*>(o)->*Method)(std::forward<Args>(args)...); };
    return f;
  }

  explicit operator bool() const noexcept { return call_ != nullptr; }
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_ = nullptr;
  R (*call_)(void*, Args...) = nullptr;
};

}  // namespace braid
