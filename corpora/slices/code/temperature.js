// Convert temperatures between Celsius and Fahrenheit and format them for display.
const toFahrenheit = (celsius) => (celsius * 9) / 5 + 32;
const toCelsius = (fahrenheit) => ((fahrenheit - 32) * 5) / 9;

function describe(celsius) {
  if (Number.isNaN(celsius)) {
    throw new TypeError(`not a number: ${celsius}`);
  }
  const f = toFahrenheit(celsius).toFixed(1);
  return celsius >= 100 ? `${celsius} °C (${f} °F): water boils` : `${celsius} °C (${f} °F)`;
}

for (const c of [-10, 0, 21.5, 100]) {
  console.log(describe(c));
}

module.exports = { toFahrenheit, toCelsius, describe };
